"""Classifier with a hand-written soft-threshold activation and a hand-written momentum SGD."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class SoftThreshold(torch.autograd.Function):
    """y = sign(x) * max(|x| - lam, 0); the gradient is computed in fp32 for stability."""

    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(x)
        ctx.lam = lam
        return torch.sign(x) * torch.clamp(x.abs() - lam, min=0.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        active = (x.float().abs() > ctx.lam).float()
        return grad_out.float() * active, None


class Net(nn.Module):
    def __init__(self, d_in=20, width=64, classes=4, lam=0.05):
        super().__init__()
        self.fc1 = nn.Linear(d_in, width)
        self.fc2 = nn.Linear(width, width)
        self.out = nn.Linear(width, classes)
        self.lam = lam

    def forward(self, x):
        h = SoftThreshold.apply(self.fc1(x), self.lam)
        h = SoftThreshold.apply(self.fc2(h), self.lam)
        return self.out(h)


def momentum_sgd(params, bufs, lr, momentum, wd):
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                continue
            buf = bufs.get(p)
            if buf is None:
                buf = bufs[p] = torch.zeros_like(p)
            buf.mul_(momentum).add_(p.grad + wd * p)
            p -= lr * buf
            p.grad = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=2.0, size=(4, 20))
    device = torch_xla.device()
    model = Net().to(device)
    params = list(model.parameters())
    bufs = {}
    wd = torch.tensor(5e-4, device=device)

    grad_norms = []
    for step in range(args.steps):
        y_np = rng.integers(0, 4, size=64)
        x_np = centers[y_np] + rng.normal(size=(64, 20))
        x = torch.from_numpy(x_np).float().to(device)
        y = torch.from_numpy(y_np).to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        grad_norms.append(torch.sqrt(sum((p.grad ** 2).sum() for p in params)))
        momentum_sgd(params, bufs, lr=0.05, momentum=0.9, wd=wd)
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")

    with torch.no_grad():
        y_np = rng.integers(0, 4, size=256)
        x = torch.from_numpy(centers[y_np] + rng.normal(size=(256, 20))).float().to(device)
        h = SoftThreshold.apply(model.fc1(x), model.lam)
        sparsity = (h == 0).float().mean()
        acc = (model(x).argmax(1).cpu().numpy() == y_np).mean()
    os.makedirs(args.out, exist_ok=True)
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, os.path.join(args.out, "weights.pt"))
    report = {"acc": float(acc), "sparsity": sparsity.item(), "grad_norms": torch.stack(grad_norms).cpu().tolist()}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f)
    print(f"acc {acc:.3f} sparsity {report['sparsity']:.3f}")


if __name__ == "__main__":
    main()
