"""RealNVP on dequantised 4x4 8-bit "images": affine couplings with tanh-bounded log-scales, bits/dim."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

D = 16


def checkerboard(parity):
    m = torch.zeros(4, 4)
    m[(torch.arange(4)[:, None] + torch.arange(4)[None, :]) % 2 == parity] = 1.0
    return m.flatten()


class Coupling(nn.Module):
    def __init__(self, mask, hidden=32):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(D, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 2 * D))
        self.scale = nn.Parameter(torch.ones(D))

    def _st(self, xm_):
        s, t = self.net(xm_).chunk(2, dim=-1)
        s = torch.tanh(s) * self.scale
        return s * (1 - self.mask), t * (1 - self.mask)

    def forward(self, x):
        s, t = self._st(x * self.mask)
        y = x * self.mask + (1 - self.mask) * (x * s.exp() + t)
        return y, s.sum(dim=1)

    def inverse(self, y):
        s, t = self._st(y * self.mask)
        return y * self.mask + (1 - self.mask) * ((y - t) * torch.exp(-s))


class RealNVP(nn.Module):
    def __init__(self, n_layers=4):
        super().__init__()
        self.layers = nn.ModuleList([Coupling(checkerboard(i % 2)) for i in range(n_layers)])

    def forward(self, x):
        log_det = torch.zeros(x.shape[0], device=x.device)
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det

    def inverse(self, z):
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


def log_prob(flow, x):
    z, log_det = flow(x)
    log_pz = -0.5 * (z.pow(2) + math.log(2 * math.pi)).sum(dim=1)
    return log_pz + log_det


def logit_transform(x, alpha=0.05):
    """[0,1] -> R with the change of variables' log-det per sample."""
    y = alpha + (1 - 2 * alpha) * x
    z = torch.log(y) - torch.log1p(-y)
    ld = (math.log(1 - 2 * alpha) - torch.log(y) - torch.log1p(-y)).sum(dim=1)
    return z, ld


def data(rng, n):
    base = rng.integers(0, 256, size=(n, 1)).astype(np.float32)
    ramp = np.linspace(0, 64, D, dtype=np.float32)[None, :]
    return np.clip(base * 0.5 + ramp + rng.normal(0, 8, size=(n, D)), 0, 255).astype(np.uint8)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samples", default="flow_samples.npy")
    p.add_argument("--bs", type=int, default=32)
    args = p.parse_args()
    steps = int(os.environ.get("STEPS", "300"))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    flow = RealNVP().to(dev)
    opt = torch.optim.Adam(flow.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))

    for step in range(1, steps + 1):
        x8 = torch.from_numpy(data(rng, args.bs)).to(dev)
        x = (x8.float() + torch.rand(x8.shape, device=dev)) / 256.0
        z, ld_logit = logit_transform(x)
        lp = log_prob(flow, z) + ld_logit - D * math.log(256.0)
        nll = -lp.mean()
        opt.zero_grad()
        nll.backward()
        torch.nn.utils.clip_grad_norm_(flow.parameters(), 5.0)
        opt.step()
        sched.step()
        torch_xla.sync()
        bpd = nll.item() / (D * math.log(2.0))
        print(f"step {step} nll {nll.item():.4f} bpd {bpd:.4f}")

    flow.eval()
    with torch.no_grad():
        z = torch.randn(8, D, device=dev)
        y = flow.inverse(z)
        x = (torch.sigmoid(y) - 0.05) / 0.9
        samples = (x.clamp(0, 1) * 255).cpu().numpy()
    os.makedirs(os.path.dirname(os.path.abspath(args.samples)), exist_ok=True)
    np.save(args.samples, samples)
    print("DTYPES", next(flow.parameters()).dtype, y.dtype, samples.dtype)


if __name__ == "__main__":
    main()
