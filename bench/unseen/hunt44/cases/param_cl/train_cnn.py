"""Small image CNN in channels_last with weight_norm, an orthogonal projection and a custom parametrisation."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
from torch.nn.utils import parametrizations
import torch_xla.core.xla_model as xm


class Symmetric(nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).transpose(-1, -2)


class Net(nn.Module):
    def __init__(self, n_cls=6):
        super().__init__()
        self.c1 = parametrizations.weight_norm(nn.Conv2d(3, 16, 3, padding=1))
        self.c2 = parametrizations.weight_norm(nn.Conv2d(16, 32, 3, padding=1, stride=2))
        self.proj = parametrizations.orthogonal(nn.Linear(32, 32, bias=False))
        self.mix = nn.Linear(32, 32)
        P.register_parametrization(self.mix, "weight", Symmetric())
        self.head = nn.Linear(32, n_cls)

    def forward(self, x):
        h = F.silu(self.c1(x))
        h = F.silu(self.c2(h))
        h = h.mean((2, 3))
        h = torch.tanh(self.mix(self.proj(h)))
        return self.head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = Net().to(dev, memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(args.steps):
        y = torch.randint(0, 6, (16,))
        x = torch.randn(16, 3, 16, 16) + y.view(-1, 1, 1, 1) * 0.3
        x = x.to(dev, memory_format=torch.channels_last)
        y = y.to(dev)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES", model.c1.parametrizations.weight.original0.dtype, model.proj.weight.dtype, model.mix.weight.dtype)
    with P.cached():
        w = model.mix.weight.detach().cpu()
    print("mix symmetric", w.dtype, bool((w - w.T).abs().max() == 0))


if __name__ == "__main__":
    main()
