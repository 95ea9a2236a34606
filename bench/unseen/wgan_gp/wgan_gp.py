"""WGAN-GP on a 2-D mixture of Gaussians."""
import argparse
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def sample_real(n, device):
    centers = torch.tensor([[1.0, 1.0], [-1.0, 1.0], [0.0, -1.0]], device=device)
    idx = torch.randint(0, 3, (n,), device=device)
    return centers[idx] + 0.05 * torch.randn(n, 2, device=device)


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1, device=real.device)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    score = critic(mixed)
    grads = torch.autograd.grad(score, mixed, grad_outputs=torch.ones_like(score), create_graph=True)[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--gp", type=float, default=10.0)
    args = parser.parse_args()
    torch.manual_seed(1)
    device = xm.xla_device()
    gen = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    critic = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).to(device)
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
    fixed_noise = torch.randn(16, 8, device=device)
    for step in range(args.steps):
        real = sample_real(args.batch, device)
        fake = gen(torch.randn(args.batch, 8, device=device)).detach()
        loss_c = critic(fake).mean() - critic(real).mean() + args.gp * gradient_penalty(critic, real, fake)
        opt_c.zero_grad()
        loss_c.backward()
        opt_c.step()
        loss_g = -critic(gen(torch.randn(args.batch, 8, device=device))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        xm.mark_step()
        if step % 4 == 0:
            with torch.no_grad():
                points = gen(fixed_noise).cpu()
            print(f"step {step} critic {loss_c.item():.4f} gen {loss_g.item():.4f} spread {points.std().item():.3f}")


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
