"""Gradient accumulation over a zero-initialised output layer: the head's weights and bias start
at 0 (a common initialisation of the last layer), the targets are one-hot rows and the loss is
their mean squared error, so every run starts at exactly 1/8 and moves slowly; 4 micro-batches a
step, a sync after each, the loss of each divided by 4."""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

CLASSES = 8


class ScoreNet(nn.Module):
    def __init__(self, features=32, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, CLASSES)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--micro-batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-4)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    gen = torch.Generator().manual_seed(9)
    prototypes = torch.randn(CLASSES, 32, generator=gen)
    model = ScoreNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for _ in range(args.steps):
        for _ in range(args.accum):
            labels = torch.randint(0, CLASSES, (args.micro_batch,), generator=gen)
            x = prototypes[labels] + 0.5 * torch.randn(args.micro_batch, 32, generator=gen)
            target = nn.functional.one_hot(labels, CLASSES).float()
            x, target = x.to(device), target.to(device)
            loss = nn.functional.mse_loss(model(x), target) / args.accum
            loss.backward()
            xm.mark_step()
        optimizer.step()
        optimizer.zero_grad()
        xm.mark_step()


if __name__ == "__main__":
    main()
