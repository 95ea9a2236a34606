"""Tabular regression (house-price style features) with a BatchNorm MLP and a Huber loss.

The loss is computed in float64, which under XLA_DOWNCAST_BF16 ran in f32 on the device.
"""

import argparse
import os

os.environ.setdefault("XLA_DOWNCAST_BF16", "true")

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.utils.data import DataLoader, TensorDataset

from metrics import RunningRegressionMetrics


def build_model(n_features: int, width: int = 64) -> nn.Module:
    return nn.Sequential(
        nn.Linear(n_features, width),
        nn.BatchNorm1d(width),
        nn.ReLU(),
        nn.Dropout(0.0),
        nn.Linear(width, width),
        nn.BatchNorm1d(width),
        nn.ReLU(),
        nn.Linear(width, 1),
    )


def make_table(rows: int, n_features: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, n_features, generator=g)
    w = torch.randn(n_features, 1, generator=g)
    y = torch.tanh(x @ w / 3) * 2 + 0.05 * torch.randn(rows, 1, generator=g)
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    x, y = make_table(args.batch * 16, 20)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch, shuffle=True, drop_last=True,
                        generator=torch.Generator().manual_seed(1))

    model = build_model(20).to(device)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr, alpha=0.9)
    metrics = RunningRegressionMetrics(device)
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)

    step = 0
    while step < args.steps:
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            pred = model(xb)
            loss = F.huber_loss(pred.double(), yb.double(), delta=0.5)
            loss.backward()
            optimizer.step()
            torch_xla.sync()
            loss_sum += loss.detach()
            metrics.update(pred, yb)
            step += 1
            if step % 5 == 0:
                print(f"step {step} loss {loss.item():.4f} mean {(loss_sum / step).item():.4f} r2 {metrics.r2().item():.3f}")
            if step >= args.steps:
                break


if __name__ == "__main__":
    main()
