"""Conditional WGAN-GP on an 8-mode ring of 2-D Gaussians: the class picks the mode."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N_CLASSES, Z = 8, 4


def ring_batch(rng, n):
    y = rng.integers(0, N_CLASSES, n)
    ang = 2 * math.pi * y / N_CLASSES
    pts = np.stack([np.cos(ang), np.sin(ang)], 1) * 2.0 + 0.05 * rng.standard_normal((n, 2))
    return pts, y


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(Z + N_CLASSES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                 nn.Linear(64, 2))

    def forward(self, z, onehot):
        return self.net(torch.cat([z, onehot], dim=1))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.utils.spectral_norm(nn.Linear(2 + N_CLASSES, 64)), nn.LeakyReLU(0.2),
                                 nn.Linear(64, 1))

    def forward(self, x, onehot):
        return self.net(torch.cat([x, onehot], dim=1)).squeeze(1)


def gradient_penalty(critic, real, fake, onehot):
    alpha = torch.rand(real.shape[0], 1, device=real.device)
    mix = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = critic(mix, onehot)
    (grad,) = torch.autograd.grad(out.sum(), mix, create_graph=True)
    return ((grad.norm(2, dim=1) - 1.0) ** 2).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--critic", type=int, default=2)
    ap.add_argument("--gp", type=float, default=10.0)
    args = ap.parse_args()
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    G, D = Gen().to(device), Critic().to(device)
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))
    fixed_y = torch.arange(N_CLASSES, device=device).repeat_interleave(4)
    fixed_z = torch.randn(len(fixed_y), Z, device=device)
    w_hist = []
    for it in range(args.iters):
        for _ in range(args.critic):
            pts, y = ring_batch(rng, 32)
            real = torch.from_numpy(pts).float().to(device)
            onehot = F.one_hot(torch.from_numpy(y).to(device), N_CLASSES).float()
            fake = G(torch.randn(32, Z, device=device), onehot).detach()
            w = D(real, onehot).mean() - D(fake, onehot).mean()
            loss_d = -w + args.gp * gradient_penalty(D, real, fake, onehot)
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            xm.mark_step()
        pts, y = ring_batch(rng, 32)
        onehot = F.one_hot(torch.from_numpy(y).to(device), N_CLASSES).float()
        loss_g = -D(G(torch.randn(32, Z, device=device), onehot), onehot).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        xm.mark_step()
        w_hist.append(w.item())
    with torch.no_grad():
        samples = G(fixed_z, F.one_hot(fixed_y, N_CLASSES).float()).cpu().numpy()
    centers = np.array([[math.cos(2 * math.pi * k / N_CLASSES), math.sin(2 * math.pi * k / N_CLASSES)]
                        for k in range(N_CLASSES)]) * 2.0
    err = np.linalg.norm(samples - centers[fixed_y.cpu().numpy()], axis=1).mean()
    print("W estimates", [round(v, 3) for v in w_hist], "mean distance to mode", round(float(err), 3))


if __name__ == "__main__":
    main()
