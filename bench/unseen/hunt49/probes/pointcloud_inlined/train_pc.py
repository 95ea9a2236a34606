"""EdgeConv autoencoder on synthetic shapes: FPS to a fixed size, decode M points, Chamfer loss."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm



def knn(x, k):
    """x: (B, N, C) -> indices (B, N, k) of the k nearest points (the point itself included)."""
    d = torch.cdist(x, x)
    return d.topk(k, dim=-1, largest=False).indices


def gather_neighbours(feat, idx):
    """feat (B, N, C), idx (B, N, k) -> (B, N, k, C)."""
    b = torch.arange(feat.shape[0], device=feat.device).view(-1, 1, 1)
    return feat[b, idx]


def farthest_point_sample(xyz, m):
    """Greedy FPS in a Python loop on device tensors: (B, N, 3) -> (B, m) indices."""
    B, N, _ = xyz.shape
    idx = torch.zeros(B, m, dtype=torch.long, device=xyz.device)
    dist = torch.full((B, N), 1e10, device=xyz.device)
    farthest = torch.zeros(B, dtype=torch.long, device=xyz.device)
    rows = torch.arange(B, device=xyz.device)
    for i in range(m):
        idx[:, i] = farthest
        centroid = xyz[rows, farthest].unsqueeze(1)
        d = ((xyz - centroid) ** 2).sum(-1)
        dist = torch.minimum(dist, d)
        farthest = dist.argmax(dim=-1)
    return idx


def chamfer(a, b):
    """Symmetric Chamfer distance between (B, N, 3) and (B, M, 3), mean over the batch."""
    d = torch.cdist(a, b).pow(2)
    return d.min(dim=2).values.mean(dim=1) + d.min(dim=1).values.mean(dim=1)


class EdgeConv(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.k = k
        self.mlp = nn.Sequential(nn.Linear(2 * cin, cout), nn.LayerNorm(cout), nn.GELU())

    def forward(self, x, idx):
        nb = gather_neighbours(x, idx)
        center = x.unsqueeze(2).expand_as(nb)
        e = self.mlp(torch.cat([center, nb - center], dim=-1))
        return e.max(dim=2).values


class PointAE(nn.Module):
    def __init__(self, k=8, h=32, m_out=32):
        super().__init__()
        self.k = k
        self.m_out = m_out
        self.ec1 = EdgeConv(3, h, k)
        self.ec2 = EdgeConv(h, h, k)
        self.dec = nn.Sequential(nn.Linear(h, 64), nn.GELU(), nn.Linear(64, m_out * 3))

    def forward(self, pts):
        idx = knn(pts, self.k)
        f = self.ec1(pts, idx)
        f = self.ec2(f, knn(f, self.k))
        code = f.max(dim=1).values
        return self.dec(code).view(-1, self.m_out, 3), code


def shapes(rng, b, n):
    out = np.empty((b, n, 3), dtype=np.float32)
    for i in range(b):
        u = rng.uniform(0, 2 * np.pi, n)
        v = rng.uniform(-1, 1, n)
        r = 0.5 + 0.5 * rng.random()
        if i % 2:
            out[i] = np.stack([r * np.cos(u), r * np.sin(u), v], 1)
        else:
            s = np.sqrt(1 - v ** 2)
            out[i] = np.stack([r * s * np.cos(u), r * s * np.sin(u), r * v], 1)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--points", type=int, default=128)
    p.add_argument("--sampled", type=int, default=32)
    p.add_argument("--bs", type=int, default=4)
    p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "100")))
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = PointAE(m_out=args.sampled).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    for step in range(1, args.steps + 1):
        raw = torch.from_numpy(shapes(rng, args.bs, args.points)).to(dev)
        fps = farthest_point_sample(raw, args.sampled)
        target = torch.gather(raw, 1, fps.unsqueeze(-1).expand(-1, -1, 3))
        recon, code = model(target)
        loss = chamfer(recon, target).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} chamfer {loss.item():.5f}")

    model.eval()
    with torch.no_grad():
        test = torch.from_numpy(shapes(rng, 2, args.points)).to(dev)
        sub = torch.gather(test, 1, farthest_point_sample(test, args.sampled).unsqueeze(-1).expand(-1, -1, 3))
        recon, code = model(sub)
        per_shape = chamfer(recon, sub).tolist()
        codes = code.cpu().numpy()
    print("test chamfer", [round(c, 5) for c in per_shape])
    print("DTYPES", next(model.parameters()).dtype, recon.dtype, codes.dtype)


if __name__ == "__main__":
    main()
