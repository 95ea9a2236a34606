"""A GRU forecaster whose legacy run cannot be made on torch-xla 2.9: torch-xla swaps nn.GRU for
its scan-based GRU, whose traced step meets f32 carries and bf16 arguments under the switch."""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla


class Forecaster(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.rnn = nn.GRU(3, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, series):
        out, _ = self.rnn(series)
        return self.head(out[:, -1])


def windows(n, length, gen):
    """Three correlated random walks; the target is the next value of the first one."""
    steps = torch.randn(n, length + 1, 3, generator=gen) * 0.1
    steps[:, :, 1] += 0.5 * steps[:, :, 0]
    walk = steps.cumsum(dim=1)
    return walk[:, :-1], walk[:, -1, :1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(4)
    series, targets = windows(1024, 16, gen)
    model = Forecaster().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(args.steps):
        idx = torch.randint(0, 1024, (args.batch_size,), generator=gen)
        x, y = series[idx].to(device), targets[idx].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()


if __name__ == "__main__":
    main()
