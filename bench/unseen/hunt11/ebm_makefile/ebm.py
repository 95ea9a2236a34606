"""Energy-based model on a 2-D ring mixture, trained by contrastive divergence with
short-run Langevin dynamics started from a persistent replay buffer kept on the host."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def rings(n, gen):
    k = torch.randint(0, 8, (n,), generator=gen)
    ang = k.float() * (2 * math.pi / 8)
    centre = torch.stack([2 * torch.cos(ang), 2 * torch.sin(ang)], 1)
    return centre + 0.15 * torch.randn(n, 2, generator=gen)


class Energy(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class ReplayBuffer:
    def __init__(self, size, gen):
        self.gen = gen
        self.data = torch.rand(size, 2, generator=gen) * 6 - 3

    def draw(self, n, reinit=0.05):
        idx = torch.randint(0, self.data.shape[0], (n,), generator=self.gen)
        x = self.data[idx]
        fresh = torch.rand(n, 2, generator=self.gen) * 6 - 3
        keep = torch.rand(n, generator=self.gen) > reinit
        return idx, torch.where(keep[:, None], x, fresh)

    def put(self, idx, x):
        self.data[idx] = x


def langevin(model, x, steps=20, step_size=0.05, noise=0.01):
    for _ in range(steps):
        x = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(model(x).sum(), x)
        x = x - step_size * g + noise * torch.randn_like(x)
    return x.detach()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--out", default="out")
    args = p.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = xm.xla_device()
    model = Energy().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.0, 0.999))
    buf = ReplayBuffer(2048, gen)
    alpha = 0.1
    for step in range(args.steps):
        pos = rings(args.batch, gen).to(device)
        idx, start = buf.draw(args.batch)
        neg = langevin(model, start.to(device))
        buf.put(idx, neg.cpu())
        e_pos, e_neg = model(pos), model(neg)
        loss = e_pos.mean() - e_neg.mean() + alpha * (e_pos ** 2 + e_neg ** 2).mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} gap {(e_neg.mean() - e_pos.mean()).item():.4f}")

    xs = torch.linspace(-3, 3, 64)
    grid = torch.cartesian_prod(xs, xs)
    with torch.no_grad():
        energy = model(grid.to(device)).reshape(64, 64).cpu().numpy()
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "energy.npy"), energy)
    np.save(os.path.join(args.out, "buffer.npy"), buf.data.numpy())
    radius = buf.data.norm(dim=1)
    print(f"energy {energy.dtype} range {energy.min():.3f} {energy.max():.3f}; "
          f"buffer radius mean {radius.mean().item():.3f} on ring {((radius - 2).abs() < 0.5).float().mean().item():.3f}")


if __name__ == "__main__":
    main()
