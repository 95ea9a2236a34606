"""Train a small classifier, then score it on a held-out split with NumPy (accuracy, a
confusion matrix): the predictions leave the device with .cpu().numpy() every evaluation."""

import argparse
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla


class Classifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.body(x)


def make_split(n, gen):
    x = torch.randn(n, 20, generator=gen)
    y = (x[:, :3].sum(dim=1) > 0).long() + (x[:, 3] > 1).long()
    return x, y


def evaluate(model, x, y, device, batch=64):
    model.eval()
    probs = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            logits = model(x[i : i + batch].to(device))
            probs.append(logits.softmax(dim=-1).cpu().numpy())
    model.train()
    pred = np.concatenate(probs).argmax(axis=1)
    labels = y.numpy()
    confusion = np.zeros((3, 3), dtype=np.int64)
    np.add.at(confusion, (labels, pred), 1)
    return float((pred == labels).mean()), confusion


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--eval-every", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(1)
    train_x, train_y = make_split(2048, gen)
    val_x, val_y = make_split(256, gen)
    model = Classifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, len(train_x), (64,), generator=gen)
        x, y = train_x[idx].to(device), train_y[idx].to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if step % args.eval_every == 0:
            accuracy, confusion = evaluate(model, val_x, val_y, device)
            print(f"step {step} accuracy {accuracy:.3f} confusion diagonal {confusion.diagonal().tolist()}")


if __name__ == "__main__":
    main()
