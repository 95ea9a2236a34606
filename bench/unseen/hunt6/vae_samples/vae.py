"""A small MLP VAE on synthetic 8x8 "digits"; decoded prior samples are saved for a viewer."""
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def configure_precision():
    # bf16 on the device, float64 kept in float32 (the ELBO terms below rely on it)
    os.environ["XLA_DOWNCAST_BF16"] = "1"


def glyphs(n, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.random((6, 64)) > 0.6
    idx = rng.integers(0, 6, size=n)
    flip = rng.random((n, 64)) < 0.05
    return torch.from_numpy((base[idx] ^ flip).astype(np.float32))


class VAE(nn.Module):
    def __init__(self, d=64, hidden=96, latent=6):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, hidden), nn.SiLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.SiLU(), nn.Linear(hidden, d))
        self.latent = latent

    def encode(self, x):
        h = self.enc(x)
        return self.mu(h), self.logvar(h).clamp(-6, 6)

    def decode(self, z):
        return self.dec(z)

    def forward(self, x):
        mu, logvar = self.encode(x)
        std = torch.exp(0.5 * logvar)
        z = mu + torch.randn_like(std) * std
        return self.decode(z), mu, logvar


def elbo_terms(recon_logits, x, mu, logvar):
    rec = F.binary_cross_entropy_with_logits(recon_logits, x, reduction="none").sum(-1).mean()
    lv, m = logvar.double(), mu.double()
    kl = -0.5 * torch.sum(1 + lv - m.pow(2) - lv.exp()) / x.size(0)
    return rec, kl


def main():
    configure_precision()
    torch.manual_seed(0)
    device = xm.xla_device()
    data = glyphs(384)
    model = VAE().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    batch = 32
    for step in range(12):
        x = data[step * batch:(step + 1) * batch].to(device)
        recon, mu, logvar = model(x)
        rec, kl = elbo_terms(recon, x, mu, logvar)
        beta = min(1.0, (step + 1) / 6)
        loss = rec + beta * kl.float()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} rec {rec.item():.3f} kl {kl.item():.3f}")

    model.eval()
    with torch.no_grad():
        z = torch.randn(16, model.latent, device=device)
        samples = torch.sigmoid(model.decode(z))
    torch_xla.sync()
    out = Path(os.environ.get("OUT_DIR", "out"))
    out.mkdir(exist_ok=True)
    torch.save(samples.cpu(), out / "samples.pt")
    print("saved", tuple(samples.shape), "to", out / "samples.pt")


if __name__ == "__main__":
    main()
