import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def main(steps=3):
    device = torch_xla.device()
    model = nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.randn(8, 4).to(device)
        y = torch.randn(8, 2).to(device)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss dtype", loss.dtype)


if __name__ == "__main__":
    main()
