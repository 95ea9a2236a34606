"""Coordinate MLP fitting a synthetic 2-D image with random Fourier features (Tancik et al. style,
gamma(v) = [cos(2 pi B v), sin(2 pi B v)], B ~ N(0, sigma^2)). B is drawn on the device at start-up and kept as a
module-level tensor; PSNR is computed on the host at the end."""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 20))
SIGMA = 10.0
NFEAT = 32
RES = 24

dev = xm.xla_device()
torch.manual_seed(0)
B = torch.randn(NFEAT, 2, device=dev) * SIGMA


def encode(v):
    proj = 2 * math.pi * v @ B.T
    return torch.cat([torch.cos(proj), torch.sin(proj)], dim=-1)


def target_image(res):
    ys, xs = np.meshgrid(np.linspace(0, 1, res), np.linspace(0, 1, res), indexing="ij")
    img = 0.5 + 0.25 * np.sin(12 * xs) * np.cos(9 * ys) + 0.2 * (xs > 0.5)
    coords = np.stack([xs, ys], -1).reshape(-1, 2).astype(np.float32)
    return coords, img.reshape(-1, 1).astype(np.float32)


def main():
    coords, img = target_image(RES)
    v = torch.from_numpy(coords).to(dev)
    t = torch.from_numpy(img).to(dev)
    net = nn.Sequential(nn.Linear(2 * NFEAT, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for step in range(STEPS):
        idx = torch.randperm(v.shape[0])[:128].to(dev)
        pred = net(encode(v[idx]))
        loss = ((pred - t[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} mse {loss.item():.5f}")
    with torch.no_grad():
        full = net(encode(v)).cpu().numpy()
    mse = float(np.mean((full - img) ** 2))
    print(f"psnr {10 * math.log10(1.0 / mse):.2f} dB")


if __name__ == "__main__":
    main()
