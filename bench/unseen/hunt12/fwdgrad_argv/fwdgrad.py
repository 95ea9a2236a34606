"""Forward-gradient descent: one jvp per step along a random tangent, no backward pass.

Heteroscedastic regression (mean and log-scale heads), Gaussian NLL; evaluation by CRPS,
interval coverage and a PIT histogram, written to out/metrics.json.
"""
import os
import sys

if "--bf16" in sys.argv:
    sys.argv.remove("--bf16")
    os.environ["XLA_USE_BF16"] = "1"

import argparse
import json
import math
from pathlib import Path

import torch
import torch.nn as nn
from torch.func import functional_call, jvp
import torch_xla
import torch_xla.core.xla_model as xm


class Regressor(nn.Module):
    def __init__(self, hidden=48):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.mean = nn.Linear(hidden, 1)
        self.log_scale = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        return self.mean(h).squeeze(-1), self.log_scale(h).squeeze(-1).clamp(-4.0, 3.0)


def gaussian_nll(mu, log_s, y):
    return (log_s + 0.5 * ((y - mu) * torch.exp(-log_s)) ** 2).mean() + 0.5 * math.log(2 * math.pi)


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g) * 4 - 2
    noise = 0.1 + 0.4 * x[:, 0].abs()
    y = torch.sin(2 * x[:, 0]) + 0.5 * x[:, 1] + noise * torch.randn(n, generator=g)
    return x, y


def evaluate(model, x, y):
    with torch.no_grad():
        mu, log_s = model(x)
        s = log_s.exp()
        z = (y - mu) / s
        pdf = torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        cdf = torch.special.ndtr(z)
        crps = (s * (z * (2 * cdf - 1) + 2 * pdf - 1 / math.sqrt(math.pi))).mean()
        q = float(torch.special.ndtri(torch.tensor(0.95)))
        inside = (y > mu - q * s) & (y < mu + q * s)
        coverage = inside.sum() / inside.numel()
        pit_hist = torch.histc(cdf, bins=10, min=0.0, max=1.0)
    return crps, coverage, pit_hist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    xtr, ytr = make_split(2048, 0)
    xva, yva = make_split(512, 1)
    model = Regressor().to(device)
    names = [n for n, _ in model.named_parameters()]

    for step in range(args.steps):
        idx = torch.randint(0, xtr.shape[0], (args.batch,))
        xb, yb = xtr[idx].to(device), ytr[idx].to(device)
        params = {n: p.detach() for n, p in model.named_parameters()}
        tangents = {n: torch.randn_like(p) for n, p in params.items()}

        def loss_of(p):
            mu, log_s = functional_call(model, p, (xb,))
            return gaussian_nll(mu, log_s, yb)

        loss, dloss = jvp(loss_of, (params,), (tangents,))
        for n, p in model.named_parameters():
            p.data -= args.lr * dloss * tangents[n]
        xm.mark_step()
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d} loss {loss.item():.4f} dir-deriv {dloss.item():+.3f}")

    crps, coverage, pit_hist = evaluate(model, xva.to(device), yva.to(device))
    print(f"val crps {crps:.4f} coverage90 {coverage:.3f}")
    out = Path(args.out)
    out.mkdir(exist_ok=True)
    metrics = {"crps": crps.item(), "coverage90": coverage.item(), "pit_hist": pit_hist.cpu().tolist(),
               "params": names}
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1))


if __name__ == "__main__":
    main()
