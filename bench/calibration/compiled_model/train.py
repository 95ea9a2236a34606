"""A small convolutional regressor run through torch.compile with the openxla backend (dynamo
traces the model once; the loop calls the compiled callable)."""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla


class ConvRegressor(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.conv1 = nn.Conv1d(4, channels, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(channels, channels, kernel_size=5, padding=2)
        self.head = nn.Linear(channels, 1)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        h = torch.relu(self.conv2(h))
        return self.head(h.mean(dim=2))


def make_signals(n, gen):
    """Four noisy sine channels; the target is the mean frequency."""
    freq = torch.rand(n, 1, 1, generator=gen) * 3 + 1
    t = torch.linspace(0, 6.28, 64).view(1, 1, 64)
    phase = torch.rand(n, 4, 1, generator=gen) * 6.28
    x = torch.sin(freq * t + phase) + 0.1 * torch.randn(n, 4, 64, generator=gen)
    return x, freq.view(n, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(2)
    signals, targets = make_signals(1024, gen)
    model = ConvRegressor().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    compiled = torch.compile(model, backend="openxla")
    for _ in range(args.steps):
        idx = torch.randint(0, 1024, (args.batch_size,), generator=gen)
        x, y = signals[idx].to(device), targets[idx].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(compiled(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()


if __name__ == "__main__":
    main()
