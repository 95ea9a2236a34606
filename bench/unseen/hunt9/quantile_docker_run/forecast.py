"""Multi-quantile forecaster for short univariate series.

Each window is scaled robustly (median and inter-quantile range of its context),
a causal dilated CNN predicts the 10/50/90% quantiles of the next H values, and the
pinball loss is averaged over quantile levels. Coverage of the 10-90% band is logged.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

CTX, H = 48, 8
TAUS = (0.1, 0.5, 0.9)


def series(gen, n):
    t = torch.arange(CTX + H).float()
    period = torch.randint(6, 16, (n, 1), generator=gen).float()
    level = torch.randn(n, 1, generator=gen) * 5
    trend = torch.randn(n, 1, generator=gen) * 0.05
    y = level + trend * t + torch.sin(2 * torch.pi * t / period) + 0.3 * torch.randn(n, CTX + H, generator=gen)
    return y[:, :CTX], y[:, CTX:]


class RobustScale(nn.Module):
    def forward(self, x):
        q = torch.quantile(x, torch.tensor([0.25, 0.5, 0.75], device=x.device), dim=-1, keepdim=True)
        loc, scale = q[1], (q[2] - q[0]).clamp_min(1e-3)
        return (x - loc) / scale, loc, scale


class CausalBlock(nn.Module):
    def __init__(self, ch, dilation):
        super().__init__()
        self.pad = 2 * dilation
        self.conv = nn.Conv1d(ch, ch, 3, dilation=dilation)

    def forward(self, x):
        return x + F.gelu(self.conv(F.pad(x, (self.pad, 0))))


class Forecaster(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.scale = RobustScale()
        self.inp = nn.Conv1d(1, ch, 1)
        self.blocks = nn.Sequential(*(CausalBlock(ch, d) for d in (1, 2, 4, 8)))
        self.head = nn.Linear(ch, H * len(TAUS))

    def forward(self, ctx):
        z, loc, scale = self.scale(ctx)
        h = self.blocks(self.inp(z.unsqueeze(1)))[:, :, -1]
        q = self.head(h).view(-1, len(TAUS), H)
        # monotone quantiles: the lowest, then positive increments
        q = torch.cat([q[:, :1], q[:, :1] + torch.cumsum(F.softplus(q[:, 1:]), dim=1)], dim=1)
        return q * scale.unsqueeze(1) + loc.unsqueeze(1)


def pinball(pred, target, taus):
    err = target.unsqueeze(1) - pred
    return torch.maximum(taus.view(1, -1, 1) * err, (taus.view(1, -1, 1) - 1) * err).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    model = Forecaster().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    taus = torch.tensor(TAUS, device=device)
    for step in range(1, args.steps + 1):
        ctx, fut = series(gen, args.batch)
        ctx, fut = ctx.to(device), fut.to(device)
        pred = model(ctx)
        loss = pinball(pred, fut, taus)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        inside = ((fut >= pred[:, 0]) & (fut <= pred[:, -1])).float().mean()
        print(f"step {step} pinball {loss.item():.4f} coverage {inside.item():.3f}")


if __name__ == "__main__":
    main()
