"""Toy DDPM on 2-channel 8x8 'images' (a blob at a random place), epsilon prediction."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from PIL import Image


def make_schedule(T):
    # kept on the host in float64, as the reference implementation does
    betas = torch.linspace(1e-4, 0.02, T, dtype=torch.float64)
    alphas = 1.0 - betas
    ac = torch.cumprod(alphas, dim=0)
    ac_prev = torch.cat([torch.ones(1, dtype=torch.float64), ac[:-1]])
    return {
        "betas": betas,
        "sqrt_ac": ac.sqrt(),
        "sqrt_1m_ac": (1.0 - ac).sqrt(),
        "recip_sqrt_alpha": alphas.rsqrt(),
        "eps_coef": betas / (1.0 - ac).sqrt(),
        "post_var": betas * (1.0 - ac_prev) / (1.0 - ac),
    }


def extract(table, t, shape):
    # gather one coefficient per sample on the host, send it where t lives
    out = table.gather(0, t.cpu()).float()
    return out.reshape(t.shape[0], *([1] * (len(shape) - 1))).to(t.device)


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Denoiser(nn.Module):
    def __init__(self, ch=2, width=32, tdim=32):
        super().__init__()
        self.tdim = tdim
        self.temb = nn.Sequential(nn.Linear(tdim, width), nn.SiLU(), nn.Linear(width, width))
        self.inp = nn.Conv2d(ch, width, 3, padding=1)
        self.mid = nn.Conv2d(width, width, 3, padding=1)
        self.out = nn.Conv2d(width, ch, 3, padding=1)

    def forward(self, x, t):
        h = F.silu(self.inp(x))
        h = h + self.temb(timestep_embedding(t, self.tdim))[:, :, None, None]
        h = F.silu(self.mid(h))
        return self.out(h)


def blobs(n, rng):
    yy, xx = np.mgrid[0:8, 0:8]
    cy, cx = rng.uniform(2, 6, size=(2, n))
    img = np.exp(-((yy[None] - cy[:, None, None]) ** 2 + (xx[None] - cx[:, None, None]) ** 2) / 3.0)
    img = np.stack([img, 1.0 - img], axis=1) * 2.0 - 1.0
    return torch.from_numpy(img)  # float64


@torch.no_grad()
def sample(model, sched, n, T, device):
    x = torch.randn(n, 2, 8, 8, device=device)
    for i in reversed(range(T)):
        t = torch.full((n,), i, device=device, dtype=torch.long)
        eps = model(x, t)
        mean = extract(sched["recip_sqrt_alpha"], t, x.shape) * (x - extract(sched["eps_coef"], t, x.shape) * eps)
        if i > 0:
            x = mean + extract(sched["post_var"], t, x.shape).sqrt() * torch.randn_like(x)
        else:
            x = mean
    return x.clamp(-1, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--T", type=int, default=50)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    sched = make_schedule(args.T)
    model = Denoiser().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.0)
    for step in range(args.steps):
        x0 = blobs(16, rng).float().to(device)
        t = torch.randint(0, args.T, (16,), device=device)
        noise = torch.randn_like(x0)
        xt = extract(sched["sqrt_ac"], t, x0.shape) * x0 + extract(sched["sqrt_1m_ac"], t, x0.shape) * noise
        loss = F.mse_loss(model(xt, t), noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    imgs = sample(model, sched, 4, args.T, device)
    torch.save(imgs.cpu(), os.path.join(args.out, "samples.pt"))
    grid = ((imgs[:, 0].cpu().numpy() + 1) * 127.5).astype(np.uint8)
    Image.fromarray(np.concatenate(list(grid), axis=1)).save(os.path.join(args.out, "samples.png"))
    print("sample mean", float(imgs.mean()), "std", imgs.std().item())


if __name__ == "__main__":
    main()
