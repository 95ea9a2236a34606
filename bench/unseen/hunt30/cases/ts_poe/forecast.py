"""Hourly load forecaster: 48h history -> next 12h, standardised with training-set statistics; compiled for XLA."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

HIST, HORIZON = 48, 12


def series(n_days, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(n_days * 24)
    daily = 1.0 + 0.4 * np.sin(2 * np.pi * (t % 24) / 24 - 1.2)
    weekly = 1.0 + 0.15 * ((t // 24) % 7 < 5)
    return 500.0 * daily * weekly + rng.normal(0, 20, t.size)         # float64, MW


def windows(x):
    idx = np.arange(HIST + HORIZON)[None, :] + np.arange(len(x) - HIST - HORIZON)[:, None]
    w = x[idx]
    return w[:, :HIST], w[:, HIST:]


class Forecaster(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(HIST + 2, d), nn.SiLU(), nn.Linear(d, d), nn.SiLU(), nn.Linear(d, HORIZON))

    def forward(self, hist, hour):
        phase = 2 * torch.pi * hour[:, None] / 24
        return self.net(torch.cat([hist, torch.sin(phase), torch.cos(phase)], -1))


def main(a):
    device = torch_xla.device()
    raw = series(120, a.seed)
    split = 100 * 24
    mu, sigma = raw[:split].mean(), raw[:split].std()                    # numpy float64 scalars
    z = (raw - mu) / sigma
    xtr, ytr = windows(z[:split]); xva, yva = windows(z[split - HIST:])
    hours_tr = torch.arange(len(xtr)) % 24; hours_va = (torch.arange(len(xva)) + split) % 24
    Xtr, Ytr = torch.tensor(xtr, dtype=torch.float32, device=device), torch.tensor(ytr, dtype=torch.float32, device=device)
    Xva = torch.tensor(xva, dtype=torch.float32, device=device)
    model = Forecaster().to(device)
    step_fn = torch.compile(model, backend="openxla")
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs)
    losses = []
    for epoch in range(a.epochs):
        perm = torch.randperm(len(Xtr), device=device)
        for i in range(0, len(perm) - a.bs + 1, a.bs):
            j = perm[i:i + a.bs]
            with torch_xla.step():
                pred = step_fn(Xtr[j], hours_tr.to(device)[j].float())
                loss = nn.functional.mse_loss(pred, Ytr[j])
                opt.zero_grad()
                loss.backward()
                opt.step()
            xm.add_step_closure(lambda l=loss.detach(): losses.append(l.item()))
        sched.step()
        print(f"epoch {epoch} train mse {np.mean(losses[-10:]):.4f}")
    model.eval()
    with torch.no_grad():
        zhat = model(Xva, hours_va.to(device).float())
    yhat = zhat.cpu().numpy() * sigma + mu                                # back to MW on the host
    ytrue = yva * sigma + mu
    mape = float(np.mean(np.abs(yhat - ytrue) / ytrue))
    p90 = torch.quantile(torch.from_numpy(np.abs(yhat - ytrue)), 0.9).item()
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "forecast_mw.npy"), yhat.astype(np.float32))
    json.dump({"mape": mape, "p90_abs_err_mw": p90, "mu": mu, "sigma": sigma}, open(os.path.join(a.out, "metrics.json"), "w"))
    print(f"val MAPE {100 * mape:.2f}%  p90 |err| {p90:.1f} MW")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--bs", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="out")
    main(p.parse_args())
