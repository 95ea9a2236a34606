"""Linear softmax regression trained with a hand-written SGD update (no torch.optim)."""
import os

import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

os.environ["XLA_USE_BF16"] = "1"


class Softmax(torch.nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(d, k))
        self.b = torch.nn.Parameter(torch.zeros(k))

    def forward(self, x):
        return x @ self.w + self.b


def main(lr=0.5):
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Softmax(10, 3).to(device)
    centers = torch.randn(3, 10)
    for step in range(12):
        y = torch.randint(0, 3, (32,))
        x = centers[y] + 0.5 * torch.randn(32, 10)
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
                p.grad.zero_()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
