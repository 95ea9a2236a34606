"""Point-set generator trained with a debiased Sinkhorn divergence (log domain) against target clouds.
The encoder keeps its own feature running mean/var, updated by hand in forward and used in eval."""
import argparse
import math
import os

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

EPS = float(os.environ.get("OT_EPS", "0.05"))


def sinkhorn_cost(x, y, eps, iters):
    """Entropic OT cost between uniform clouds x (B,N,D) and y (B,M,D), log-domain updates."""
    B, N, _ = x.shape
    M = y.shape[1]
    C = torch.cdist(x, y, p=2).pow(2) / 2
    log_a = torch.full((B, N), -math.log(N), device=x.device, dtype=x.dtype)
    log_b = torch.full((B, M), -math.log(M), device=x.device, dtype=x.dtype)
    f = torch.zeros_like(log_a)
    g = torch.zeros_like(log_b)
    for _ in range(iters):
        f = -eps * torch.logsumexp((g[:, None, :] - C) / eps + log_b[:, None, :], dim=2)
        g = -eps * torch.logsumexp((f[:, :, None] - C) / eps + log_a[:, :, None], dim=1)
    return f.mul(log_a.exp()).sum(1) + g.mul(log_b.exp()).sum(1)


def sinkhorn_divergence(x, y, eps, iters):
    return sinkhorn_cost(x, y, eps, iters) - 0.5 * (sinkhorn_cost(x, x, eps, iters) + sinkhorn_cost(y, y, eps, iters))


class CloudGen(nn.Module):
    def __init__(self, n_pts=32, z=16, dim=2, momentum=0.05):
        super().__init__()
        self.n_pts, self.dim, self.m = n_pts, dim, momentum
        self.enc = nn.Sequential(nn.Linear(z, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU())
        self.out = nn.Linear(128, n_pts * dim)
        self.register_buffer("running_mean", torch.zeros(128))
        self.register_buffer("running_var", torch.ones(128))

    def forward(self, z):
        h = self.enc(z)
        if self.training:
            with torch.no_grad():
                self.running_mean.mul_(1 - self.m).add_(h.mean(0), alpha=self.m)
                self.running_var.mul_(1 - self.m).add_(h.var(0, unbiased=False), alpha=self.m)
            h = (h - h.mean(0)) / torch.sqrt(h.var(0, unbiased=False) + 1e-5)
        else:
            h = (h - self.running_mean) / torch.sqrt(self.running_var + 1e-5)
        return self.out(h).view(-1, self.n_pts, self.dim)


def target_clouds(b, n, gen):
    t = torch.rand(b, n, generator=gen) * 2 * math.pi
    r = 1.0 + 0.05 * torch.randn(b, n, generator=gen)
    return torch.stack([r * torch.cos(t), r * torch.sin(t)], -1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args()
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(0)
    model = CloudGen().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        z = torch.randn(32, 16, generator=gen).to(device)
        y = target_clouds(32, 32, gen).to(device)
        x = model(z)
        loss = sinkhorn_divergence(x, y, EPS, args.iters).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        if step % 20 == 0:
            print(f"step {step} S_eps {loss.item():.5f}")
    model.eval()
    with torch.no_grad():
        x = model(torch.randn(8, 16, generator=gen).to(device))
        radius = x.norm(dim=-1)
        stats = torch.stack([radius.mean(), radius.std(), model.running_var.mean()])
    print("radius mean/std, feat var:", [round(v, 4) for v in stats.cpu().tolist()])
    torch.save({"clouds": x.cpu(), "state": model.state_dict()}, "clouds.pt")


if __name__ == "__main__":
    main()
