"""Physics surrogate: fits a small MLP in float64 (the original GPU code ran .double())."""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def load_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 2 * np.pi, size=(n, 1))
    return t, np.sin(t) * np.exp(-0.2 * t)


def main(argv):
    device = xm.xla_device()
    t, u = load_data()
    t_dev = torch.from_numpy(t).to(device)
    u_dev = torch.from_numpy(u).to(device)
    net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)).double().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=5e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    for it in range(60):
        pred = net(t_dev)
        resid = pred - u_dev
        loss = resid.pow(2).mean() + 1e-4 * sum(p.pow(2).sum() for p in net.parameters())
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        xm.mark_step()
    grid = torch.linspace(0, 2 * np.pi, 50, dtype=torch.float64).unsqueeze(1).to(device)
    with torch.no_grad():
        curve = net(grid)
    print("DTYPES", pred.dtype, loss.dtype, curve.dtype, next(net.parameters()).dtype)
    err = np.abs(curve.cpu().numpy() - (np.sin(grid.cpu().numpy()) * np.exp(-0.2 * grid.cpu().numpy())))
    json.dump({"max_err": float(err.max()), "final_loss": loss.item()}, sys.stdout)
    print()


if __name__ == "__main__":
    os.environ.update(XLA_USE_BF16="1")
    main(sys.argv[1:])
