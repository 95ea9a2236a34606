"""Entry point: parses flags, builds model/optimizer/criterion, hands them to engine.py and evaluate.py."""

import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
parser.add_argument("--lr", type=float, default=0.05)
args = parser.parse_args()

if args.precision == "bf16":
    os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, TensorDataset

from engine import train_one_epoch
from evaluate import evaluate


class SmallCNN(nn.Module):
    def __init__(self, n_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def make_loaders(steps):
    g = torch.Generator().manual_seed(0)
    n = 8 * steps
    x = torch.randn(n + 32, 3, 16, 16, generator=g)
    y = torch.randint(0, 5, (n + 32,), generator=g)
    x[torch.arange(n + 32), y % 3] += 0.5
    train = DataLoader(TensorDataset(x[:n], y[:n]), batch_size=8, shuffle=False)
    val = DataLoader(TensorDataset(x[n:], y[n:]), batch_size=16)
    return train, val


def main():
    steps = int(os.environ.get("STEPS", "10"))
    device = xm.xla_device()
    model = SmallCNN().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    train_loader, val_loader = make_loaders(steps)
    for epoch in range(args.epochs):
        avg = train_one_epoch(model, optimizer, criterion, train_loader, device, epoch)
        logits, probs, acc = evaluate(model, val_loader, device)
        print(f"epoch {epoch} train_loss {avg:.4f} val_acc {acc:.3f}")
    print("DTYPES", next(model.parameters()).dtype, logits.dtype, probs.dtype)


if __name__ == "__main__":
    main()
