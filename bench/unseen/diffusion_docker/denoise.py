"""A DDPM-style noise predictor on 16-dimensional vectors drawn from a Gaussian mixture.

Continuous timesteps in [0, 1), cosine schedule, sinusoidal timestep embedding computed in forward.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def timestep_embedding(t, dim: int, max_period: float = 10000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None] * 1000.0 * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResidualMLPBlock(nn.Module):
    def __init__(self, width: int, temb: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, width * 2)
        self.fc2 = nn.Linear(width * 2, width)
        self.film = nn.Linear(temb, width * 2)

    def forward(self, h, emb):
        scale, shift = self.film(emb).chunk(2, dim=-1)
        z = self.norm(h) * (1 + scale) + shift
        return h + self.fc2(F.silu(self.fc1(z)))


class Denoiser(nn.Module):
    def __init__(self, data_dim=16, width=64, temb=32, blocks=3):
        super().__init__()
        self.temb = temb
        self.time_mlp = nn.Sequential(nn.Linear(temb, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.inp = nn.Linear(data_dim, width)
        self.blocks = nn.ModuleList([ResidualMLPBlock(width, temb) for _ in range(blocks)])
        self.out = nn.Linear(width, data_dim)

    def forward(self, x_t, t):
        emb = self.time_mlp(timestep_embedding(t, self.temb))
        h = self.inp(x_t)
        for block in self.blocks:
            h = block(h, emb)
        return self.out(h)


def alpha_bar(t):
    return torch.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2


def mixture(n: int, dim: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(4, dim, generator=g) * 2.0
    which = torch.randint(0, 4, (n,), generator=g)
    return centers[which] + 0.1 * torch.randn(n, dim, generator=g)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    data = mixture(args.batch * 10, 16, seed=5)
    model = Denoiser().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    for step in range(args.steps):
        x0 = data[(step % 10) * args.batch : (step % 10 + 1) * args.batch].to(device)
        t = torch.rand(x0.shape[0], device=device)
        noise = torch.randn_like(x0)
        ab = alpha_bar(t)[:, None]
        x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
        pred = model(x_t, t)
        loss = F.mse_loss(pred, noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
