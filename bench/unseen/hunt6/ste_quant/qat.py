"""Quantisation-aware training of an MLP with a learned-step-size (LSQ) fake quantiser."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class LSQ(torch.autograd.Function):
    """Fake-quantise x with a learned step s; straight-through for x, LSQ gradient for s."""

    @staticmethod
    def forward(ctx, x, s, qmax):
        x_s = x / s
        q = torch.clamp(torch.round(x_s), -qmax, qmax)
        ctx.save_for_backward(x_s, q)
        ctx.qmax = qmax
        ctx.g = 1.0 / math.sqrt(x.numel() * qmax)
        return q * s

    @staticmethod
    def backward(ctx, grad):
        x_s, q = ctx.saved_tensors
        qmax = ctx.qmax
        lower = (x_s < -qmax).float()
        upper = (x_s > qmax).float()
        middle = 1.0 - lower - upper
        grad_x = grad * middle
        grad_s = ((upper - lower) * qmax + middle * (q - x_s)) * grad
        return grad_x, grad_s.sum().reshape(1) * ctx.g, None


class QLinear(nn.Linear):
    def __init__(self, cin, cout, bits=4):
        super().__init__(cin, cout)
        self.qmax = 2 ** (bits - 1) - 1
        self.step = nn.Parameter(torch.tensor([0.05]))

    def forward(self, x):
        w = LSQ.apply(self.weight, self.step, self.qmax)
        return F.linear(x, w, self.bias)


class QMLP(nn.Module):
    def __init__(self, d=20, h=64, c=5):
        super().__init__()
        self.fc1 = QLinear(d, h)
        self.fc2 = QLinear(h, h)
        self.head = nn.Linear(h, c)

    def forward(self, x):
        return self.head(F.gelu(self.fc2(F.gelu(self.fc1(x)))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    teacher = torch.randn(20, 5)
    model = QMLP().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    for step in range(args.steps):
        x = torch.randn(args.batch, 20)
        y = (x @ teacher).argmax(-1)
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} step_fc1 {model.fc1.step.item():.4f}")


if __name__ == "__main__":
    main()
