"""Tiny volume renderer fit to one synthetic 16x16 view (a NeRF without the camera zoo)."""
import argparse
import os
import sys

pre = argparse.ArgumentParser(add_help=False)
pre.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
known, _ = pre.parse_known_args()
os.environ["XLA_USE_BF16"] = "1" if known.precision == "bf16" else "0"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
from PIL import Image

H = W = 16
N_SAMPLES, L_FREQ = 24, 6


def encode(p, freqs):
    x = p[..., None] * freqs  # (..., 3, L)
    return torch.cat([p, torch.sin(x).flatten(-2), torch.cos(x).flatten(-2)], dim=-1)


class Field(nn.Module):
    def __init__(self, d_in):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_in, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, h):
        out = self.mlp(h)
        return torch.relu(out[..., 0]), torch.sigmoid(out[..., 1:])


def rays(device):
    u = torch.arange(W, device=device) / (W - 1) * 2 - 1
    v = torch.arange(H, device=device) / (H - 1) * 2 - 1
    vv, uu = torch.meshgrid(v, u, indexing="ij")
    d = torch.stack([uu, vv, torch.ones_like(uu)], -1).reshape(-1, 3)
    return torch.zeros_like(d), d / d.norm(dim=-1, keepdim=True)


def render(field, o, d, freqs, near=0.5, far=2.5, jitter=True):
    t = torch.linspace(0.0, 1.0, N_SAMPLES, device=o.device)
    z = (near * (1 - t) + far * t).expand(o.shape[0], N_SAMPLES)
    if jitter:
        z = z + (torch.rand_like(z) - 0.5) * (far - near) / N_SAMPLES
    pts = o[:, None] + d[:, None] * z[..., None]
    sigma, rgb = field(encode(pts, freqs))
    delta = torch.cat([z[:, 1:] - z[:, :-1], torch.full_like(z[:, :1], 1e10)], -1)
    alpha = 1 - torch.exp(-sigma * delta)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha + 1e-10], -1), -1)[:, :-1]
    w = alpha * trans
    return (w[..., None] * rgb).sum(1), (w * z).sum(1)


def target_view():
    yy, xx = np.mgrid[0:H, 0:W] / (H - 1)
    img = np.stack([xx, yy, 0.5 + 0.5 * np.sin(6 * xx * yy)], -1)
    return img.reshape(-1, 3)  # float64


def main():
    ap = argparse.ArgumentParser(parents=[pre])
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--out", default="render.png")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    freqs = 2.0 ** torch.arange(L_FREQ, device=device)
    field = Field(3 + 2 * 3 * L_FREQ).to(device)
    opt = torch.optim.Adam(field.parameters(), lr=5e-3)
    o, d = rays(device)
    target = torch.tensor(target_view(), device=device, dtype=torch.float32)
    for it in range(args.iters):
        idx = torch.randperm(H * W, device=device)[:128]
        rgb, _ = render(field, o[idx], d[idx], freqs)
        mse = ((rgb - target[idx]) ** 2).mean()
        opt.zero_grad()
        mse.backward()
        opt.step()
        xm.mark_step()
        psnr = -10 * torch.log10(mse.detach())
        print(f"iter {it} mse {mse.item():.5f} psnr {psnr.item():.2f}")
    with torch.no_grad():
        rgb, depth = render(field, o, d, freqs, jitter=False)
    img = (rgb.reshape(H, W, 3).clamp(0, 1).cpu().numpy() * 255).round().astype(np.uint8)
    Image.fromarray(img).save(args.out)
    np.save(os.path.splitext(args.out)[0] + "_depth.npy", depth.reshape(H, W).cpu().numpy())
    print("depth range", depth.min().item(), depth.max().item(), file=sys.stderr)


if __name__ == "__main__":
    main()
