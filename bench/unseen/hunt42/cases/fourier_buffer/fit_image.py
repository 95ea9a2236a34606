"""Fit a coordinate MLP with random Fourier features to a synthetic 2-D image. The projection matrix is a buffer the
sweep attaches after the model is on the device (its scale is the swept parameter), so it is registered after the
model's move and after the optimizer is built. The only output besides the log is the rendered image (.npy)."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla


class CoordMLP(nn.Module):
    def __init__(self, n_freq=32, hid=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * n_freq, hid), nn.ReLU(), nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, 1))

    def forward(self, xy):
        proj = 2 * math.pi * xy @ self.B
        return self.net(torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)).squeeze(-1)


def target_image(n):
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, n), torch.linspace(-1, 1, n), indexing="ij")
    img = torch.sin(6 * xs) * torch.cos(4 * ys) + (xs * xs + ys * ys < 0.3).float()
    return torch.stack([xs, ys], -1).reshape(-1, 2), img.reshape(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=4.0)
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "30")))
    ap.add_argument("--res", type=int, default=24)
    ap.add_argument("--out", default="/tmp/hunt42_render.npy")
    args = ap.parse_args()

    dev = torch_xla.device()
    torch.manual_seed(0)
    coords, img = target_image(args.res)
    coords, img = coords.to(dev), img.to(dev)

    model = CoordMLP().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.register_buffer("B", (torch.randn(2, 32) * args.scale).to(dev))

    for step in range(args.steps):
        pick = torch.randperm(coords.shape[0])[:128].to(dev)
        pred = model(coords[pick])
        loss = ((pred - img[pick]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        if step % 5 == 0:
            print(f"step {step} mse {loss.item():.5f}")

    with torch.no_grad():
        render = model(coords)
        psnr = -10 * torch.log10(((render - img) ** 2).mean())
    print("DTYPES", model.net[0].weight.dtype, model.B.dtype, render.dtype)
    print(f"psnr {psnr.item():.2f}")
    np.save(args.out, render.reshape(args.res, args.res).cpu().numpy())


if __name__ == "__main__":
    main()
