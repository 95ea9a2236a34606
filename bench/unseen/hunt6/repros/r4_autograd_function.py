"""Repro: `.float()` of a boolean mask inside a custom autograd.Function's backward stays f32:
the gradient reduction computes in f32 where the legacy run had bf16 (ste_quant)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class ClipSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x, s)
        return torch.clamp(x, -1, 1) * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        inside = (x.abs() <= 1).float()
        grad_s = (grad * torch.clamp(x, -1, 1)).sum().reshape(1)
        return grad * inside * s, grad_s


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.s = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return ClipSTE.apply(self.lin(x), self.s)


device = xm.xla_device()
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    x = torch.randn(16, 8).to(device)
    loss = F.mse_loss(model(x), torch.zeros(16, 8).to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.4f}")
