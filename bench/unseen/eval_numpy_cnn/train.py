"""Small CNN on a synthetic four-class "shapes" dataset, validated after every epoch.

CI runs two short epochs on the CPU device (see .github/workflows/smoke.yml) and keeps
runs/<name>/metrics.json and the last validation probabilities as an artifact.
"""

import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from evaluation import evaluate
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4


def make_shapes(n: int, size: int = 16, seed: int = 0):
    """Noisy images of a horizontal bar, a vertical bar, a square or a cross."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    images = 0.4 * torch.randn(n, 1, size, size, generator=g)
    lo, hi = size // 2 - 2, size // 2 + 2
    for i, c in enumerate(labels.tolist()):
        if c in (0, 3):
            images[i, 0, lo:hi, 2:-2] += 1.0
        if c in (1, 3):
            images[i, 0, 2:-2, lo:hi] += 1.0
        if c == 2:
            images[i, 0, 4:-4, 4:-4] += 1.0
    return images, labels


class SmallCNN(nn.Module):
    def __init__(self, classes: int = NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Linear(32 * 4 * 4, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12, help="training steps per epoch")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--out", default="runs/smoke")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = xm.xla_device()
    train_x, train_y = make_shapes(args.batch_size * args.steps, seed=1)
    val_x, val_y = make_shapes(128, seed=2)
    train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(3), drop_last=True)
    val_loader = DataLoader(TensorDataset(val_x, val_y), batch_size=64)

    model = SmallCNN().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)

    os.makedirs(args.out, exist_ok=True)
    history = []
    for epoch in range(args.epochs):
        model.train()
        running, steps = 0.0, 0
        for images, labels in pl.MpDeviceLoader(train_loader, device):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            running += loss.item()
            steps += 1
        report, probs = evaluate(model, val_loader, device)
        report.update(epoch=epoch, train_loss=round(running / steps, 6))
        history.append(report)
        print(f"epoch {epoch}: train loss {report['train_loss']:.4f} val loss {report['loss']:.4f} "
              f"acc {report['accuracy']:.3f} auc {report['auc_ovr']:.3f}")

    np.save(os.path.join(args.out, "val_probs.npy"), probs)
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(history, f, indent=1)


if __name__ == "__main__":
    main()
