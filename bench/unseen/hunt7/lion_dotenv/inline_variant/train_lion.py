"""Residual MLP regressor trained with a Lion optimizer written here (no extra dependency).

Settings come from the .env file next to this script (python-dotenv when installed, else a
minimal reader with the same rules for plain KEY=VALUE lines).
"""
import argparse
import os
from pathlib import Path

try:
    from dotenv import load_dotenv
except ImportError:  # keep the script dependency-free
    def load_dotenv(path, override=False):
        for line in Path(path).read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, value = line.split("=", 1)
            if override or key.strip() not in os.environ:
                os.environ[key.strip()] = value.strip().strip("\"'")

os.environ["XLA_USE_BF16"] = "1"  # variant: the .env line inlined, to verify the code part

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class Lion(torch.optim.Optimizer):
    """Lion (sign momentum). The learning rate lives on the device so a schedule can change it
    without a recompilation."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, device=None):
        defaults = dict(betas=betas, weight_decay=weight_decay)
        super().__init__(params, defaults)
        self.lr = torch.tensor(lr, device=device)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - self.lr * group["weight_decay"])
                update = (m * b1 + p.grad * (1 - b1)).sign_()
                p.sub_(self.lr * update)
                m.mul_(b2).add_(p.grad, alpha=1 - b2)

    def set_lr(self, value):
        self.lr.fill_(value)


class ResBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class Regressor(nn.Module):
    def __init__(self, d_in=20, d=64, blocks=3):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.Sequential(*[ResBlock(d) for _ in range(blocks)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        return self.out(self.blocks(self.inp(x))).squeeze(-1)


def make_data(n, gen):
    x = torch.randn(n, 20, generator=gen)
    w = torch.linspace(-1, 1, 20)
    y = torch.tanh(x @ w) + 0.05 * torch.randn(n, generator=gen)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-4)
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    dev = torch_xla.device()
    model = Regressor().to(dev)
    beta2 = float(os.environ.get("LION_BETA2", "0.99"))
    opt = Lion(model.parameters(), lr=args.lr, betas=(0.9, beta2), weight_decay=0.1, device=dev)
    x_all, y_all = make_data(args.steps * args.batch, gen)
    for step in range(args.steps):
        xb = x_all[step * args.batch:(step + 1) * args.batch].to(dev)
        yb = y_all[step * args.batch:(step + 1) * args.batch].to(dev)
        loss = nn.functional.smooth_l1_loss(model(xb), yb, beta=0.5)
        opt.zero_grad()
        loss.backward()
        opt.step()
        opt.set_lr(args.lr * (1 - step / args.steps))
        xm.mark_step()
        print(f"step {step + 1} loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
