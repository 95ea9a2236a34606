"""A VAE whose latent posterior is a Student-t (heavier tails than the Gaussian VAE), trained on synthetic
8x8 "digits"; the KL is estimated by Monte Carlo against a standard Student-t prior."""
import os

os.environ.setdefault("XLA_DOWNCAST_BF16", "1")

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.distributions import StudentT


class TVAE(nn.Module):
    def __init__(self, d=64, h=128, z=8, dof=4.0):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, h), nn.SiLU(), nn.Linear(h, 2 * z))
        self.dec = nn.Sequential(nn.Linear(z, h), nn.SiLU(), nn.Linear(h, d))
        self.dof = dof

    def forward(self, x):
        mu, raw = self.enc(x).chunk(2, dim=-1)
        scale = F.softplus(raw) + 1e-3
        q = StudentT(self.dof, mu, scale)
        z = q.rsample()
        p = StudentT(self.dof, torch.zeros_like(mu), torch.ones_like(scale))
        kl = (q.log_prob(z) - p.log_prob(z)).sum(-1)
        return self.dec(z), kl


def digits(gen, n):
    base = torch.zeros(10, 8, 8)
    for k in range(10):
        base[k, k % 8, :] = 1.0
        base[k, :, (3 * k) % 8] = 1.0
    lab = torch.randint(0, 10, (n,), generator=gen)
    x = base[lab] + 0.1 * torch.randn(n, 8, 8, generator=gen)
    return x.clamp(0, 1).view(n, 64)


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(5)
    device = torch_xla.device()
    model = TVAE().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    beta = torch.tensor(0.5, dtype=torch.float64)
    for step in range(int(os.environ.get("STEPS", "12"))):
        x = digits(gen, 64).to(device)
        logits, kl = model(x)
        rec = F.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(-1)
        loss = (rec + beta.item() * kl).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} rec {rec.mean().item():.3f} kl {kl.mean().item():.3f}", flush=True)
    print("DTYPES", "weight", model.dec[2].weight.dtype, "recon", logits.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
