"""Quantisation-aware training of an MLP regressor: activations go through a fake
quantiser (straight-through estimator) whose range is tracked by an EMA observer."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class FakeQuant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi, levels):
        scale = (hi - lo) / (levels - 1)
        inside = ((x >= lo) & (x <= hi)).to(torch.float32)
        ctx.save_for_backward(inside)
        return torch.round((torch.maximum(torch.minimum(x, hi), lo) - lo) / scale) * scale + lo

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside, None, None, None


class RangeObserver(nn.Module):
    def __init__(self, momentum=0.1, levels=16):
        super().__init__()
        self.momentum, self.levels = momentum, levels
        # float64 so that the range statistics stay fp32 under XLA_DOWNCAST_BF16
        self.register_buffer("lo", torch.zeros((), dtype=torch.float32))
        self.register_buffer("hi", torch.ones((), dtype=torch.float32))

    def forward(self, x):
        if self.training:
            m = self.momentum
            self.lo.mul_(1 - m).add_(x.detach().min().float() * m)
            self.hi.mul_(1 - m).add_(x.detach().max().float() * m)
        return FakeQuant.apply(x, self.lo.float(), self.hi.float(), self.levels)


class QMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.q1 = nn.Linear(10, 48), RangeObserver()
        self.fc2, self.q2 = nn.Linear(48, 48), RangeObserver()
        self.out = nn.Linear(48, 1)

    def forward(self, x):
        h = self.q1(F.relu(self.fc1(x)))
        h = self.q2(F.relu(self.fc2(h)))
        return self.out(h).squeeze(-1)


torch.manual_seed(0)
device = torch_xla.device()
model = QMLP().to(device)
model.to(torch.float32)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
w = torch.randn(10)
for step in range(10):
    x = torch.randn(64, 10)
    y = torch.sin(x @ w) + 0.05 * torch.randn(64)
    x, y = x.to(device), y.to(device)
    with torch.autocast("xla", dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
print("DTYPES fc1", model.fc1.weight.dtype, "lo", model.q1.lo.dtype, "loss", loss.dtype)
print(f"ranges q1 [{model.q1.lo.item():.3f}, {model.q1.hi.item():.3f}]")
