"""A small GAN on an 8-dimensional ring-of-Gaussians distribution (non-saturating loss, label smoothing)."""

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

LATENT = 16


def generator(width=64, out_dim=8):
    return nn.Sequential(
        nn.Linear(LATENT, width), nn.LeakyReLU(0.2), nn.Linear(width, width), nn.LeakyReLU(0.2),
        nn.Linear(width, out_dim),
    )


def discriminator(width=64, in_dim=8):
    return nn.Sequential(
        nn.Linear(in_dim, width), nn.LeakyReLU(0.2), nn.Linear(width, width), nn.LeakyReLU(0.2), nn.Linear(width, 1)
    )


def ring_samples(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    angle = torch.randint(0, 8, (n,), generator=g).float() * (2 * torch.pi / 8)
    base = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1) * 2.0
    return torch.cat([base, 0.1 * torch.randn(n, 6, generator=g)], dim=1) + 0.05 * torch.randn(n, 8, generator=g)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--real-label", type=float, default=0.9)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = xm.xla_device()
    netG, netD = generator().to(device), discriminator().to(device)
    optG = torch.optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.999))
    optD = torch.optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()
    data = ring_samples(args.batch * 10, seed=4)

    for step in range(args.steps):
        real = data[(step % 10) * args.batch : (step % 10 + 1) * args.batch].to(device)
        z = torch.randn(args.batch, LATENT).to(device)
        real_t = torch.full((args.batch, 1), args.real_label, device=device)
        fake_t = torch.zeros(args.batch, 1, device=device)

        # discriminator step
        fake = netG(z)
        errD = criterion(netD(real), real_t) + criterion(netD(fake.detach()), fake_t)
        optD.zero_grad()
        errD.backward()
        xm.optimizer_step(optD)

        # generator step (non-saturating: fake labelled real)
        errG = criterion(netD(fake), torch.ones(args.batch, 1, device=device))
        optG.zero_grad()
        errG.backward()
        xm.optimizer_step(optG)
        xm.mark_step()
        if step % 5 == 0:
            print(f"step {step} loss_D {errD.item():.4f} loss_G {errG.item():.4f}")


if __name__ == "__main__":
    main()
