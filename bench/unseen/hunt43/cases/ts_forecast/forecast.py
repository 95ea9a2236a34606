"""Multivariate forecaster: per-feature standardisation in NumPy, sliding windows, an LSTM encoder with a linear
head predicting `horizon` steps of every feature; de-normalised forecasts written to CSV."""
import argparse
import csv
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def synth_series(n=2000, feats=3, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    base = np.stack([10 + 3 * np.sin(2 * np.pi * t / 24), 50 + 8 * np.cos(2 * np.pi * t / 168),
                     0.01 * t + np.sin(2 * np.pi * t / 12)], axis=1)
    return base[:, :feats] + rng.normal(0, 0.5, size=(n, feats))


def windows(arr, lookback, horizon):
    n = len(arr) - lookback - horizon + 1
    x = np.stack([arr[i:i + lookback] for i in range(n)])
    y = np.stack([arr[i + lookback:i + lookback + horizon] for i in range(n)])
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.float32))


class Forecaster(nn.Module):
    def __init__(self, feats, horizon, hidden=32):
        super().__init__()
        self.horizon, self.feats = horizon, feats
        self.lstm = nn.LSTM(feats, hidden, batch_first=True)
        self.head = nn.Linear(hidden, horizon * feats)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1]).view(-1, self.horizon, self.feats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lookback", type=int, default=24)
    ap.add_argument("--horizon", type=int, default=6)
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "300")))
    ap.add_argument("--csv", default="forecast.csv")
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()
    series = synth_series()
    split = int(0.8 * len(series))
    mean = series[:split].mean(axis=0)
    std = series[:split].std(axis=0) + 1e-8
    normed = (series - mean) / std
    x_tr, y_tr = windows(normed[:split], args.lookback, args.horizon)
    x_te, y_te = windows(normed[split - args.lookback:], args.lookback, args.horizon)
    std_t = torch.tensor(std.tolist(), device=dev)
    mean_t = torch.tensor(mean.tolist(), device=dev)

    model = Forecaster(series.shape[1], args.horizon).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        idx = torch.randint(0, len(x_tr), (32,), generator=g)
        xb, yb = x_tr[idx].to(dev), y_tr[idx].to(dev)
        pred = model(xb)
        loss = nn.functional.mse_loss(pred, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.5f}")

    model.eval()
    maes = []
    rows = []
    with torch.no_grad():
        for i in range(0, len(x_te), 64):
            xb, yb = x_te[i:i + 64].to(dev), y_te[i:i + 64].to(dev)
            pred = model(xb)
            mae_orig = ((pred - yb).abs() * std_t).mean(dim=(0, 1))
            maes.append(mae_orig.cpu().numpy())
            p_np = pred.cpu().numpy() * std + mean
            rows.extend(p_np[:, 0, :].tolist())
            last = pred[:, -1] * std_t + mean_t
    print("DTYPES weight", model.head.weight.dtype, "pred", pred.dtype, "std_t", std_t.dtype, "last", last.dtype)
    mae = np.mean(np.stack(maes), axis=0)
    print("test MAE per feature (original units)", np.round(mae, 3).tolist(), mae.dtype)
    print("last horizon-end forecast", [round(v, 3) for v in last[-1].tolist()])
    with open(args.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"f{j}" for j in range(series.shape[1])])
        for r in rows:
            w.writerow([f"{v:.4f}" for v in r])
    print("wrote", len(rows), "rows")


if __name__ == "__main__":
    main()
