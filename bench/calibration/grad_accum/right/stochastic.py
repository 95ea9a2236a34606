"""Classifier trained with gradient accumulation: the loss of each micro-batch is divided by the
number of micro-batches, backward runs per micro-batch and the device syncs after each one (the
graph stays small); the optimizer steps every --accum micro-batches."""

import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla

FEATURES = 48
CLASSES = 10


class Classifier(nn.Module):
    def __init__(self, hidden=96):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, CLASSES)

    def forward(self, x):
        return self.head(self.body(x))


def micro_batches(centers, size, gen):
    """Endless (features, labels) micro-batches: a noisy class centre per sample."""
    while True:
        labels = torch.randint(0, CLASSES, (size,), generator=gen)
        yield centers[labels] + torch.randn(size, FEATURES, generator=gen), labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--micro-batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(1)
    centers = torch.randn(CLASSES, FEATURES, generator=gen) * 1.5
    model = Classifier().to(device)
    model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    batches = micro_batches(centers, args.micro_batch, gen)
    optimizer.zero_grad()
    for micro in range(args.steps * args.accum):
        x, y = next(batches)
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x.to(torch.bfloat16)), y) / args.accum
        loss.backward()
        torch_xla.sync()
        if (micro + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()
            torch_xla.sync()


if __name__ == "__main__":
    main()
