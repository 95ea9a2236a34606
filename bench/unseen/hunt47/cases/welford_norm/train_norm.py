"""Sensor regression with an online input normaliser (Welford's running mean/variance, updated in a Python loop
over the batch rows on the device), a cumulative-sum drift feature over a long window, and a logsumexp
pooling head. Validation cosine similarity is normalised by hand."""
import os

os.environ.setdefault("XLA_DOWNCAST_BF16", "1")

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 20))
WIN, CH, OUT = 256, 4, 3


class Welford:
    def __init__(self, n, device):
        self.count = 0
        self.mean = torch.zeros(n, device=device)
        self.m2 = torch.zeros(n, device=device)

    def update(self, rows):
        for r in rows:
            self.count += 1
            delta = r - self.mean
            self.mean = self.mean + delta / self.count
            self.m2 = self.m2 + delta * (r - self.mean)

    @property
    def std(self):
        return torch.sqrt(self.m2 / max(self.count - 1, 1) + 1e-5)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2 * CH, 32, 5, padding=2)
        self.proj = nn.Linear(32, OUT)

    def forward(self, x):
        drift = torch.cumsum(x, dim=-1) / WIN
        h = torch.relu(self.conv(torch.cat([x, drift], dim=1)))
        pooled = torch.logsumexp(h, dim=-1) - torch.log(torch.tensor(float(WIN)))
        return self.proj(pooled)


def cosine_matrix(a, b, eps=1e-8):
    an = a / (a.norm(dim=1, keepdim=True) + eps)
    bn = b / (b.norm(dim=1, keepdim=True) + eps)
    return an @ bn.T


def make_batch(g, n=8):
    x = torch.randn(n, CH, WIN, generator=g) * torch.tensor([1.0, 5.0, 0.2, 30.0])[None, :, None] + 3.0
    y = torch.stack([x[:, 0].mean(-1), x[:, 1, -32:].mean(-1), x[:, 3].std(-1) / 30], dim=1)
    return x, y


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    stats = Welford(CH, dev)
    g = torch.Generator().manual_seed(3)
    for step in range(STEPS):
        x, y = make_batch(g)
        x, y = x.to(dev), y.to(dev)
        stats.update(x.transpose(1, 2).reshape(-1, CH)[::32])
        xn = (x - stats.mean[None, :, None]) / stats.std[None, :, None]
        pred = model(xn)
        loss = nn.functional.smooth_l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    with torch.no_grad():
        x, y = make_batch(g, 16)
        x, y = x.to(dev), y.to(dev)
        pred = model((x - stats.mean[None, :, None]) / stats.std[None, :, None])
        sim = cosine_matrix(pred, y).diagonal().mean()
    print(f"val cos {sim.item():.4f} std {stats.std.cpu().tolist()}")


if __name__ == "__main__":
    main()
