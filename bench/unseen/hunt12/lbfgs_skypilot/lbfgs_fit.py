"""Full-batch L-BFGS fit of a damped oscillation by a small MLP, interrupted and resumed.

Phase 1 fits and writes a checkpoint (xm.save); phase 2 builds a fresh model and optimizer,
restores both from the checkpoint and continues. The fit is plotted and compared with the
analytic curve in float64.
"""
import argparse
import math
import os
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def curve(t):
    return np.exp(-0.6 * t) * np.cos(4.0 * t) + 0.1 * t


class Fit(nn.Module):
    def __init__(self, width=40):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))

    def forward(self, t):
        return self.net(t)


def run_phase(model, opt, t, y, iters, tag):
    def closure():
        opt.zero_grad()
        loss = F.mse_loss(model(t), y)
        loss.backward()
        return loss

    for i in range(iters):
        loss = opt.step(closure)
        xm.mark_step()
        print(f"{tag} iter {i} loss {loss.item():.5f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phase1", type=int, default=6)
    ap.add_argument("--phase2", type=int, default=6)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(exist_ok=True)

    torch.manual_seed(0)
    device = torch_xla.device()
    t_np = np.linspace(0.0, 3.0, 256)
    t = torch.from_numpy(t_np).float().unsqueeze(1).to(device)
    y = torch.from_numpy(curve(t_np)).float().unsqueeze(1).to(device)

    model = Fit().to(device)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=8)
    run_phase(model, opt, t, y, args.phase1, "phase1")
    xm.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, out / "fit.ckpt")

    # resume as a fresh process would
    ckpt = torch.load(out / "fit.ckpt", map_location="cpu")
    model = Fit().to(device)
    model.load_state_dict(ckpt["model"])
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=8)
    opt.load_state_dict(ckpt["optimizer"])
    run_phase(model, opt, t, y, args.phase2, "phase2")

    grid = np.linspace(0.0, 3.5, 351)
    with torch.no_grad():
        pred = model(torch.tensor(grid, dtype=torch.float32).unsqueeze(1).to(device)).squeeze(1).cpu().numpy()
    err = np.abs(pred.astype(np.float64) - curve(grid))
    print(f"max abs error in [0, 3]: {err[:301].max():.4f}  extrapolation [3, 3.5]: {err[301:].max():.4f}")
    np.save(out / "fit_pred.npy", pred)

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(grid, curve(grid), label="analytic")
    ax.plot(grid, pred, "--", label="L-BFGS fit")
    ax.legend()
    fig.savefig(out / "fit.png", dpi=80)
    print("saved", os.fspath(out / "fit.png"))


if __name__ == "__main__":
    main()
