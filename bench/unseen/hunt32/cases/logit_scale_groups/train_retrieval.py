"""Dual encoder (query/doc towers), InfoNCE with a learned temperature that joins the optimizer after warm-up."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

WARMUP, STEPS, B, D_IN = 10, 30, 32, 20


class Tower(nn.Module):
    def __init__(self, d_in, d=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, d))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = Tower(D_IN)
        self.d = Tower(D_IN)


def param_groups(model, wd):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name.lower() else decay).append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


device = xm.xla_device()
torch.manual_seed(0)
model = DualEncoder().to(device)
opt = torch.optim.AdamW(param_groups(model, 0.05), lr=2e-3)

# CLIP's init: log(1 / 0.07); frozen during warm-up, then learned without weight decay
logit_scale = nn.Parameter(torch.tensor(np.log(1 / 0.07), device=device), requires_grad=False)

proj = torch.randn(D_IN, D_IN)
for step in range(STEPS):
    if step == WARMUP:
        logit_scale.requires_grad_(True)
        opt.add_param_group({"params": [logit_scale], "weight_decay": 0.0, "lr": 1e-2})
    q_raw = torch.randn(B, D_IN)
    d_raw = q_raw @ proj + 0.1 * torch.randn(B, D_IN)
    q = model.q(q_raw.to(device))
    d = model.d(d_raw.to(device))
    logits = logit_scale.exp().clamp(max=100) * q @ d.t()
    labels = torch.arange(B, device=device)
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.3f} scale {logit_scale.exp().item():.2f}")

print("DTYPES", model.q.net[0].weight.dtype, logit_scale.dtype, logits.dtype, loss.dtype)
torch.save({"model": model.state_dict(), "logit_scale": logit_scale.detach().cpu()}, "retrieval.pt")
