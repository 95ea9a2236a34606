"""RealNVP-style density model on two moons: affine couplings with an invertible
linear mixing layer between them (Glow LU form). The log-determinant is
accumulated in float64 so the NLL does not lose the small terms."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def moons(n, rng):
    t = rng.uniform(0.0, math.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(t), 1.0 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return np.stack([x, y], 1) + 0.05 * rng.standard_normal((n, 2))


class Coupling(nn.Module):
    def __init__(self, dim, hidden, parity):
        super().__init__()
        self.register_buffer("mask", (torch.arange(dim) % 2 == parity).float())
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, 2 * dim))
        self.log_scale = nn.Parameter(torch.zeros(dim))

    def _st(self, keep):
        s, t = self.net(keep).chunk(2, -1)
        s = torch.tanh(s) * self.log_scale.exp()
        return s * (1 - self.mask), t * (1 - self.mask)

    def forward(self, x):
        keep = x * self.mask
        s, t = self._st(keep)
        return keep + (1 - self.mask) * (x * s.exp() + t), s.sum(-1)

    def inverse(self, y):
        keep = y * self.mask
        s, t = self._st(keep)
        return keep + (1 - self.mask) * ((y - t) * torch.exp(-s))


class InvLinear(nn.Module):
    """Glow's LU-parametrised invertible linear layer: log|det W| = sum(log_s)."""

    def __init__(self, dim):
        super().__init__()
        w = torch.linalg.qr(torch.randn(dim, dim))[0]
        perm, lower, upper = torch.linalg.lu(w)
        diag = torch.diagonal(upper)
        self.register_buffer("perm", perm)
        self.register_buffer("sign_s", torch.sign(diag))
        self.register_buffer("lower_mask", torch.tril(torch.ones(dim, dim), -1))
        self.lower = nn.Parameter(lower)
        self.upper = nn.Parameter(torch.triu(upper, 1))
        self.log_s = nn.Parameter(torch.log(diag.abs()))

    def weight(self):
        eye = torch.eye(self.lower.shape[0], device=self.lower.device)
        lower = self.lower * self.lower_mask + eye
        upper = self.upper * self.lower_mask.T + torch.diag(self.sign_s * torch.exp(self.log_s))
        return self.perm @ lower @ upper

    def forward(self, x):
        return x @ self.weight().T, self.log_s.sum().expand(x.shape[0])

    def inverse(self, y):
        return y @ torch.linalg.inv(self.weight()).T


class Flow(nn.Module):
    def __init__(self, dim=2, hidden=64, blocks=4):
        super().__init__()
        layers = []
        for i in range(blocks):
            layers += [Coupling(dim, hidden, i % 2), InvLinear(dim)]
        self.layers = nn.ModuleList(layers)
        self.dim = dim

    def log_prob(self, x):
        logdet = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
        for layer in self.layers:
            x, ld = layer(x)
            logdet = logdet + ld.double()
        base = -0.5 * (x ** 2).sum(-1) - 0.5 * self.dim * math.log(2 * math.pi)
        return base.double() + logdet

    @torch.no_grad()
    def sample(self, n, device):
        z = torch.randn(n, self.dim, device=device, dtype=self.layers[0].log_scale.dtype)
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--out", default=".")
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    flow = Flow().to(device)
    opt = torch.optim.Adam(flow.parameters(), lr=2e-3)
    for step in range(args.steps):
        x = torch.tensor(moons(args.batch, rng), dtype=torch.float32, device=device)
        nll = -flow.log_prob(x).mean()
        opt.zero_grad()
        nll.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(flow.parameters(), 5.0)
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} nll {nll.item():.4f} gnorm {gnorm.item():.3f}")

    test = torch.tensor(moons(2048, rng), dtype=torch.float32, device=device)
    with torch.no_grad():
        test_nll = -flow.log_prob(test).mean()
    samples = flow.sample(2048, device).cpu().numpy()
    ref = moons(2048, np.random.default_rng(1))
    h_s, _, _ = np.histogram2d(samples[:, 0], samples[:, 1], bins=16, range=[[-1.5, 2.5], [-1.0, 1.5]])
    h_r, _, _ = np.histogram2d(ref[:, 0], ref[:, 1], bins=16, range=[[-1.5, 2.5], [-1.0, 1.5]])
    tv = 0.5 * np.abs(h_s / h_s.sum() - h_r / h_r.sum()).sum()
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "flow_samples.npy"), samples)
    print(f"test nll {test_nll.item():.4f}  samples {samples.dtype}  histogram TV {tv:.3f}")


if __name__ == "__main__":
    main()
