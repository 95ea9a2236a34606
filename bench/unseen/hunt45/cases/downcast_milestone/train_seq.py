"""GRU forecaster. Reads configs/seq.toml from the working directory; makes its data set in --data-dir when missing.
From epoch `milestone_epoch` on, the LR drops tenfold and a smoothness penalty (computed in double) joins the loss."""
import argparse
import os
import sys
import time
import tomllib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, TensorDataset


def progress(it, total, desc):
    t0 = time.time()
    for i, v in enumerate(it, 1):
        yield v
        sys.stderr.write(f"\r{desc} {i}/{total} [{time.time() - t0:.1f}s]")
    sys.stderr.write("\n")


def get_data(data_dir, n=160, t=12):
    path = os.path.join(data_dir, "series.npy")
    if not os.path.exists(path):
        os.makedirs(data_dir, exist_ok=True)
        rng = np.random.default_rng(3)
        phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
        grid = np.linspace(0, 4 * np.pi, t + 1)[None, :]
        np.save(path, np.sin(grid + phase) + 0.05 * rng.standard_normal((n, t + 1)))
    s = np.load(path)  # float64
    x = torch.from_numpy(s[:, :-1, None]).float()
    y = torch.from_numpy(s[:, 1:]).float()
    return TensorDataset(x, y)


class Forecaster(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.gru = nn.GRU(1, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h, _ = self.gru(x)
        return self.out(h).squeeze(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--config", default="configs/seq.toml")
    args = ap.parse_args()
    with open(args.config, "rb") as f:
        cfg = tomllib.load(f)
    tr = cfg["train"]
    torch.manual_seed(0)
    ds = get_data(args.data_dir)
    train_ds, val_ds = torch.utils.data.random_split(ds, [128, 32], generator=torch.Generator().manual_seed(0))
    loader = DataLoader(train_ds, batch_size=tr["batch"], shuffle=True, generator=torch.Generator().manual_seed(1))
    dev = xm.xla_device()
    model = Forecaster(cfg["model"]["hidden"]).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=tr["lr"])
    best, bad = float("inf"), 0
    for epoch in range(tr["epochs"]):
        late = epoch >= tr["milestone_epoch"]
        if late:
            for g in opt.param_groups:
                g["lr"] = tr["lr"] * 0.1
        for x, y in progress(loader, len(loader), f"epoch {epoch}"):
            x, y = x.to(dev), y.to(dev)
            pred = model(x)
            loss = F.smooth_l1_loss(pred, y)
            if late:
                d2 = pred.double().diff(n=2, dim=1)
                loss = loss + 0.1 * d2.pow(2).mean().float()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), tr["clip"])
            opt.step()
            xm.mark_step()
            print(f"loss {loss.item():.5f}")
        model.eval()
        with torch.no_grad():
            vx, vy = val_ds[:]
            val = F.mse_loss(model(vx.to(dev)), vy.to(dev)).item()
        model.train()
        print(f"epoch {epoch} val {val:.5f}")
        if val < best - 1e-4:
            best, bad = val, 0
        else:
            bad += 1
            if bad >= tr["patience"]:
                print("early stop")
                break
    print("best", best, "DTYPES", model.out.weight.dtype)


if __name__ == "__main__":
    main()
