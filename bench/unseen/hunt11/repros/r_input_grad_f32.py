"""stochastic: a tensor moved to the device (`start.to(device)`) is fed to the model, whose pre-hook casts it,
and differentiated with torch.autograd.grad w.r.t. itself (Langevin dynamics): the gradient and the whole update
chain stay f32 where the legacy run computed them in bf16. From ebm_makefile/ebm.py:46-51, 70."""
import os
import sys

os.environ["XLA_USE_BF16"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from _ir import ir_dtype


def langevin(model, x, steps=5, step_size=0.05, noise=0.01):
    for _ in range(steps):
        x = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(model(x).sum(), x)
        x = x - step_size * g + noise * torch.randn_like(x)
    return x.detach(), g


device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 32), nn.SiLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
start = torch.rand(64, 2) * 6 - 3
neg, g = langevin(model, start.to(device))
print(f"grad w.r.t. input IR {ir_dtype(g)}; sample after 5 updates IR {ir_dtype(neg)}")
loss = model(neg).mean()
opt.zero_grad()
loss.backward()
xm.optimizer_step(opt)
xm.mark_step()
host = neg.cpu()
print(f"sample on the host {host.dtype}; distinct values in column 0: {host[:, 0].unique().numel()} of 64; "
      f"first {[round(v, 5) for v in host[:3, 0].tolist()]}")
