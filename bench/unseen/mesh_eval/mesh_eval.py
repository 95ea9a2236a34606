"""A CNN on synthetic images; evaluation averaged with xm.mesh_reduce, per-class accuracy on the host."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


class SmallCNN(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.relu(self.bn(self.c2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def batches(n, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        y = torch.randint(0, 3, (16,), generator=g)
        x = torch.randn(16, 1, 12, 12, generator=g) + y.view(-1, 1, 1, 1).float()
        out.append((x, y))
    return out


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = SmallCNN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    train = pl.MpDeviceLoader(batches(12, 0), device)
    for step, (x, y) in enumerate(train):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        print(f"step {step} loss {loss.item():.4f}")
    model.eval()
    correct = np.zeros(3)
    seen = np.zeros(3)
    total = 0.0
    with torch.no_grad():
        for x, y in pl.MpDeviceLoader(batches(4, 1), device):
            logits = model(x)
            total += F.cross_entropy(logits, y, reduction="sum").item()
            pred = logits.argmax(-1).cpu().numpy()
            for c in range(3):
                mask = y.cpu().numpy() == c
                correct[c] += (pred[mask] == c).sum()
                seen[c] += mask.sum()
    mean_loss = xm.mesh_reduce("eval_loss", total / 64, np.mean)
    print("eval loss", mean_loss, "per-class acc", np.round(correct / np.maximum(seen, 1), 3))


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
