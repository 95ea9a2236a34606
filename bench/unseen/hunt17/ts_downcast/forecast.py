"""Multi-horizon forecaster on synthetic seasonal series; the windows come from NumPy float64 arrays."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import torch_xla
import torch_xla.core.xla_model as xm


def sincos_table(length, dim):
    pos = torch.arange(length).float().unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * div)
    table[:, 1::2] = torch.cos(pos * div)
    return table


class Forecaster(nn.Module):
    def __init__(self, window, horizon, dim=32):
        super().__init__()
        self.embed = nn.Linear(1, dim)
        # learned positions, initialised from the sinusoidal table
        self.pos = nn.Parameter(sincos_table(window, dim))
        self.conv = nn.Conv1d(dim, dim, kernel_size=3, padding=2)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim * window, horizon)

    def forward(self, x):  # x: (B, W)
        b, w = x.shape
        h = self.embed(x.unsqueeze(-1)) + self.pos
        # day-of-cycle feature made on the fly
        phase = torch.arange(w, device=x.device).float() * (2 * math.pi / 24.0)
        h = h + 0.1 * torch.sin(phase)[None, :, None]
        h = self.conv(h.transpose(1, 2))[..., :w].transpose(1, 2)
        h = self.norm(F.gelu(h))
        return self.head(h.reshape(b, -1))


def make_windows(n_series, length, window, horizon, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    xs, ys = [], []
    for _ in range(n_series):
        s = np.sin(2 * np.pi * t / 24 + rng.uniform(0, 6)) + 0.3 * np.sin(2 * np.pi * t / 7) + 0.1 * rng.standard_normal(length)
        for i in range(0, length - window - horizon, 5):
            xs.append(s[i:i + window])
            ys.append(s[i + window:i + window + horizon])
    return np.asarray(xs), np.asarray(ys)  # float64


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--window", type=int, default=48)
    p.add_argument("--horizon", type=int, default=12)
    p.add_argument("--bs", type=int, default=32)
    args = p.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()

    x_np, y_np = make_windows(8, 200, args.window, args.horizon)
    ds = TensorDataset(torch.from_numpy(x_np).float(), torch.from_numpy(y_np))
    loader = DataLoader(ds, batch_size=args.bs, shuffle=True, drop_last=True)

    model = Forecaster(args.window, args.horizon).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    step = 0
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            pred = model(xb)
            loss = F.mse_loss(pred.double(), yb)
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
            torch_xla.sync()
            if step % 5 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.5f}")
            step += 1

    model.eval()
    xv = torch.from_numpy(x_np[:64]).float().to(device)
    yv = torch.from_numpy(y_np[:64]).to(device)
    with torch.no_grad():
        pv = model(xv)
        mae = (pv.double() - yv).abs().mean().item()
    np.save("forecast.npy", pv.cpu().numpy())
    print(f"val mae {mae:.4f}")


if __name__ == "__main__":
    main()
