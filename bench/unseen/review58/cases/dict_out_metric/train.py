"""Encoder whose forward returns a dict; metrics accumulated on the device in a torchmetrics-like class."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 6))


class Net(nn.Module):
    def __init__(self, d=16, k=5):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 32), nn.Tanh())
        self.cls = nn.Linear(32, k)

    def forward(self, x):
        h = self.enc(x)
        return {"logits": self.cls(h), "emb": F.normalize(h, dim=-1)}


class MeanAccuracy:
    """Accumulates correct/total on the device; compute() returns a Python float."""

    def __init__(self):
        self.correct = torch.zeros(())
        self.total = torch.zeros(())

    def to(self, device):
        self.correct, self.total = self.correct.to(device), self.total.to(device)
        return self

    def update(self, logits, target):
        self.correct += (logits.argmax(-1) == target).sum()
        self.total += target.numel()

    def compute(self):
        return (self.correct / self.total).item()


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    proto = torch.randn(5, 16)
    anchors = F.normalize(torch.randn(5, 32), dim=-1).to(dev)
    metric = MeanAccuracy().to(dev)
    emb_norms = []
    for step in range(STEPS):
        y = torch.randint(0, 5, (24,))
        x = proto[y] + 0.5 * torch.randn(24, 16)
        x, y = x.to(dev), y.to(dev)
        out = model(x)
        loss = F.cross_entropy(out["logits"], y) + 0.1 * F.mse_loss(out["emb"], anchors[y])
        opt.zero_grad()
        loss.backward()
        opt.step()
        metric.update(out["logits"].detach(), y)
        emb_norms.append(out["emb"].detach().norm(dim=-1).mean().cpu())
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} acc {metric.compute():.3f}")
    print("DTYPES", out["logits"].dtype, metric.correct.dtype, torch.stack(emb_norms).dtype)


if __name__ == "__main__":
    main()
