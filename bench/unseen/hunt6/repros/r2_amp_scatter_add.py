"""Repro: amp leaves scatter_add's destination bf16 (zeros_like of a Linear output under autocast)
while its source was promoted to f32 by an f32 edge weight: HLO verifier crash (gnn_scatter)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class Agg(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, dst, w):
        h = self.lin(x)
        msg = h * w.unsqueeze(-1)                       # bf16 * f32 -> f32 under autocast
        idx = dst.unsqueeze(-1).expand_as(msg)
        return torch.zeros_like(h).scatter_add(0, idx, msg)


device = xm.xla_device()
model = Agg().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
dst = torch.tensor([0, 1, 1, 2, 3, 0]).to(device)
for step in range(4):
    x = torch.randn(6, 4).to(device)
    w = torch.rand(6).to(device)
    loss = model(x, dst, w).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.4f}")
