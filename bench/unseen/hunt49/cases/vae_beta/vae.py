"""A small VAE on synthetic 8x8 stroke images, KL weight annealed over the first steps."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from sampling import save_samples

SIDE = 8
LATENT = 6


class VAE(nn.Module):
    def __init__(self, d=SIDE * SIDE, h=48, latent=LATENT):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, h), nn.SiLU(), nn.Linear(h, h), nn.SiLU())
        self.to_mu = nn.Linear(h, latent)
        self.to_logvar = nn.Linear(h, latent)
        self.dec = nn.Sequential(nn.Linear(latent, h), nn.SiLU(), nn.Linear(h, d))

    def encode(self, x):
        h = self.enc(x)
        return self.to_mu(h), self.to_logvar(h).clamp(-8.0, 8.0)

    def decode(self, z):
        return self.dec(z)

    def forward(self, x):
        mu, logvar = self.encode(x)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.decode(z), mu, logvar


def strokes(rng, n):
    imgs = np.zeros((n, SIDE, SIDE), dtype=np.float32)
    for i in range(n):
        r = rng.integers(0, SIDE)
        c = rng.integers(0, SIDE)
        imgs[i, r, :] = 1.0
        imgs[i, :, c] = 0.7
    return imgs.reshape(n, -1)


def beta_at(step, warmup):
    return min(1.0, step / warmup)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="vae_out")
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()
    steps = int(os.environ.get("STEPS", "200"))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = VAE().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    for step in range(1, steps + 1):
        x = torch.from_numpy(strokes(rng, args.bs)).to(dev)
        recon_logits, mu, logvar = model(x)
        rec = F.binary_cross_entropy_with_logits(recon_logits, x, reduction="none").sum(dim=1).mean()
        kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1)).mean()
        beta = beta_at(step, args.warmup)
        loss = rec + beta * kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        nats_per_dim = loss.item() / (SIDE * SIDE)
        print(f"step {step} loss {loss.item():.4f} rec {rec.item():.4f} kl {kl.item():.4f} beta {beta:.2f} "
              f"bpd {nats_per_dim / math.log(2):.4f}")

    model.eval()
    tiles = save_samples(model, args.out, LATENT, dev)
    with torch.no_grad():
        probe = torch.from_numpy(strokes(rng, 4)).to(dev)
        mu, logvar = model.encode(probe)
        np.save(os.path.join(args.out, "posterior_mu.npy"), mu.cpu().numpy())
        sigma = logvar.mul(0.5).exp().mean().item()
    print("DTYPES", next(model.parameters()).dtype, mu.dtype, tiles.dtype, f"sigma {sigma:.4f}")


if __name__ == "__main__":
    main()
