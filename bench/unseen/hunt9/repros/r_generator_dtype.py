import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def make(gen, n):
    x = torch.rand(n, 4, generator=gen)
    return x, x.sum(1, keepdim=True)


def main():
    gen = torch.Generator().manual_seed(0)
    device = xm.xla_device()
    model = nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = torch.zeros((), device=device)
    for step in range(3):
        x, y = make(gen, 8)
        x, y = x.to(device), y.to(device)
        w.fill_(step / 3)
        loss = w * ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(step, loss.item())


main()
