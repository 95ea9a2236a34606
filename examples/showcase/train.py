"""Showcase: a small classifier trained in bf16 on an XLA device, the legacy way.

The precision switch is an environment variable set before torch-xla creates its first device
tensor, as many training scripts did before torch-xla 2.5 deprecated it. `bf16-migrate` turns it
into explicit code; `bf16-migrate verify` runs both versions and compares them.

Run: PJRT_DEVICE=CPU python train.py --steps 30
"""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla

CLASSES, FEATURES = 4, 24


class Classifier(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.head = nn.Linear(hidden, CLASSES)

    def forward(self, x):
        return self.head(self.body(x))


def synthetic_batches(steps: int, batch: int, seed: int):
    """Points around four centres; the label is the centre's index (int64)."""
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn(CLASSES, FEATURES, generator=gen) * 2
    for _ in range(steps):
        labels = torch.randint(0, CLASSES, (batch,), generator=gen)
        points = centres[labels] + torch.randn(batch, FEATURES, generator=gen)
        yield points, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    model = Classifier(args.hidden).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    for step, (points, labels) in enumerate(synthetic_batches(args.steps, args.batch, seed=1), start=1):
        points, labels = points.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(points), labels)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
