"""Sequence regressor: cumsum/cumprod features in forward, hand-written weighted Huber loss with numpy
per-sample weights, gradient accumulation over micro-batches of different sizes."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

MICRO = [12, 7, 5]  # micro-batch sizes of one optimizer step
STEPS = 10
T = 8


class CumNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 16)
        self.gate = nn.Linear(16, 16)
        self.out = nn.Linear(32, 1)

    def forward(self, x):  # x: (B, T, 3)
        h = torch.tanh(self.inp(x))
        run = torch.cumsum(h, dim=1) / torch.arange(1, x.size(1) + 1, device=x.device).view(1, -1, 1)
        decay = torch.cumprod(torch.sigmoid(self.gate(h)), dim=1)
        feat = torch.cat([run[:, -1], (decay * h).sum(1)], dim=-1)
        return self.out(feat).squeeze(-1)


def huber(pred, target, w, delta=0.5):
    err = pred - target
    quad = 0.5 * err.pow(2)
    lin = delta * (err.abs() - 0.5 * delta)
    per = torch.where(err.abs() <= delta, quad, lin)
    return (per * w).sum() / w.sum()


def batch(rng, n):
    x = rng.standard_normal((n, T, 3))
    y = np.cumsum(x[:, :, 0], axis=1)[:, -1] * 0.3 + np.prod(np.tanh(x[:, :2, 1]), axis=1)
    w = rng.uniform(0.5, 1.5, size=n)  # float64 per-sample weights
    return torch.from_numpy(x).float(), torch.from_numpy(y).float(), torch.from_numpy(w)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = CumNet().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        opt.zero_grad()
        total = sum(MICRO)
        for n in MICRO:
            x, y, w = batch(rng, n)
            x, y, w = x.to(dev), y.to(dev), w.to(dev)
            loss = huber(model(x), y, w) * (n / total)
            loss.backward()
        opt.step()
        xm.mark_step()
    x, y, w = batch(rng, 32)
    with torch.no_grad():
        pred = model(x.to(dev))
    resid = (pred.cpu() - y).numpy()
    print("eval mae", float(np.abs(resid).mean()), resid.dtype)


if __name__ == "__main__":
    main()
