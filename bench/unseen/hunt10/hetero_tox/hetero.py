"""Heteroscedastic regression: a deep residual MLP with gradient checkpointing and weight norm
predicts a mean and a variance; Gaussian NLL; calibration written with NumPy."""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrizations
from torch_xla.utils.checkpoint import checkpoint  # torch.utils.checkpoint has no XLA device module
import torch_xla
import torch_xla.core.xla_model as xm


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = parametrizations.weight_norm(nn.Linear(d, d))
        self.fc2 = parametrizations.weight_norm(nn.Linear(d, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, h):
        return h + self.fc2(F.silu(self.fc1(self.norm(h))))


class HeteroMLP(nn.Module):
    def __init__(self, d_in, d=64, depth=6, ckpt=True):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))
        self.head = nn.Linear(d, 2)
        self.ckpt = ckpt
        self.register_buffer("min_var", torch.tensor(1e-4))

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = checkpoint(blk, h) if self.ckpt and self.training else blk(h)
        mu, raw = self.head(h).unbind(-1)
        var = F.softplus(raw) + self.min_var
        return mu, var


def nll_by_hand(mu, var, y):
    log2pi = torch.tensor(math.log(2 * math.pi), device=y.device)
    return 0.5 * (log2pi + var.log() + (y - mu) ** 2 / var).mean()


def make_data(n, d_in, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d_in))
    w = rng.normal(size=d_in)
    noise_scale = 0.1 + 0.5 * np.abs(x[:, 0])
    y = x @ w + noise_scale * rng.normal(size=n)
    return x.astype(np.float32), y  # y stays float64


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--out", default="out")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    device = torch_xla.device()
    torch.manual_seed(0)
    d_in = 8
    x_np, y_np = make_data(512, d_in, 0)
    model = HeteroMLP(d_in).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    bs = 64
    for step in range(args.steps):
        idx = np.arange(step * bs, (step + 1) * bs) % len(x_np)
        xb = torch.from_numpy(x_np[idx]).to(device)
        yb = torch.from_numpy(y_np[idx]).to(device)  # float64 on the host
        mu, var = model(xb)
        loss = F.gaussian_nll_loss(mu, yb, var) + 0.1 * nll_by_hand(mu, var, yb)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
        xm.optimizer_step(opt)
        torch_xla.sync()
        xm.master_print(f"step {step} nll {loss.item():.4f}")

    model.eval()
    xv_np, yv_np = make_data(256, d_in, 1)
    with torch.no_grad():
        mu, var = model(torch.from_numpy(xv_np).to(device))
        z = (torch.from_numpy(yv_np).to(device) - mu) / var.sqrt()
    torch_xla.sync()
    z_host = z.cpu().numpy()
    inside = {str(k): float(np.mean(np.abs(z_host) < k)) for k in (1, 2, 3)}
    np.save(os.path.join(args.out, "z.npy"), z_host)
    json.dump({"coverage": inside, "mean_var": var.mean().item()}, open(os.path.join(args.out, "calib.json"), "w"))
    print("coverage", inside, "z", z_host.dtype)


if __name__ == "__main__":
    main()
