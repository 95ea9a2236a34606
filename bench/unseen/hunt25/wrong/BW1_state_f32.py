"""Regression on drifting inputs with a running input normaliser kept outside any module (plain tensors on
the device, updated in place under no_grad with mul_/add_), the legacy bf16 switch on."""
import os


import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

D = 12
STEPS = 10


class RunningNorm:
    """Exponential running mean / variance of the inputs, as device tensors (not module state)."""

    def __init__(self, dim, device, momentum=0.1):
        self.mean = torch.zeros(dim, device=device)
        self.var = torch.ones(dim, device=device)
        self.momentum = momentum

    @torch.no_grad()
    def update(self, x):
        m = x.mean(0)
        d = x - m
        self.mean.mul_(1 - self.momentum).add_(m, alpha=self.momentum)
        self.var.mul_(1 - self.momentum).add_((d * d).mean(0), alpha=self.momentum)

    def __call__(self, x):
        return ((x - self.mean) * torch.rsqrt(self.var + 1e-5)).to(x.dtype)


def batch(rng, step):
    x = rng.normal(loc=0.3 * step, scale=1.0 + 0.1 * step, size=(48, D)).astype(np.float32)
    y = np.tanh(x[:, :3].sum(1, keepdims=True) - 0.9 * step).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = nn.Sequential(nn.Linear(D, 32), nn.SiLU(), nn.Linear(32, 1)).to(dev).to(torch.bfloat16)
    norm = RunningNorm(D, dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(STEPS):
        x, y = batch(rng, step)
        x, y = x.to(dev, dtype=torch.bfloat16), y.to(dev, dtype=torch.bfloat16)
        norm.update(x)
        pred = model(norm(x))
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step + 1} loss {loss.item():.6f}")
    stats = torch.stack([norm.mean, norm.var]).float().cpu().numpy()
    print("final mean[0] %.4f var[0] %.4f" % (stats[0, 0], stats[1, 0]))


if __name__ == "__main__":
    main()
