"""Tabular regression with standardised targets, one-cycle schedule, clipping and checkpoints."""
import csv
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STATS = {"mean": [0.5, -1.0, 2.0, 0.0], "std": [1.0, 2.0, 0.5, 1.5], "target_mean": 3.0, "target_std": 2.0}


def make_data(rng, n):
    x = rng.normal(STATS["mean"], STATS["std"], size=(n, 4))
    y = x @ np.array([0.3, -0.2, 1.1, 0.5]) + 3.0 + 0.1 * rng.normal(size=n)
    return x.astype(np.float32), y.astype(np.float32)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x):
        return self.fc2(F.silu(self.fc1(x))).squeeze(-1)


def main(out_dir):
    device = xm.xla_device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    mean = torch.tensor(STATS["mean"]).to(device)
    std = torch.tensor(STATS["std"]).to(device)
    model = Net().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    steps = 12
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-2, total_steps=steps)
    for step in range(steps):
        xb, yb = make_data(rng, 64)
        x = (torch.from_numpy(xb).to(device) - mean) / std
        y = (torch.from_numpy(yb).to(device) - STATS["target_mean"]) / STATS["target_std"]
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        xm.mark_step()
        print(f"step {step} mse {loss.item():.5f}")
    xm.save(model.state_dict(), os.path.join(out_dir, "net.pt"))
    xb, yb = make_data(rng, 8)
    with torch.no_grad():
        pred = model((torch.from_numpy(xb).to(device) - mean) / std) * STATS["target_std"] + STATS["target_mean"]
    with open(os.path.join(out_dir, "pred.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        for p, t in zip(pred.cpu().numpy(), yb):
            writer.writerow([f"{p:.4f}", f"{t:.4f}"])
    print("mean abs error", float(np.abs(pred.cpu().numpy() - yb).mean()))


if __name__ == "__main__":
    os.environ["XLA_DOWNCAST_BF16"] = "1"
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
