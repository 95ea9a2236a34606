"""XLA_USE_FP16 set by the script: a no-op since torch-xla 2.5, so the script trains in fp32 and the
right migration only removes the line. What does verify say about that removal?"""
import os

os.environ["XLA_USE_FP16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(0)
for step in range(20):
    x = torch.randn(64, 16, generator=g)
    y = x[:, :4].sum(1, keepdim=True)
    loss = ((model(x.to(device)) - y.to(device)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    xm.mark_step()
    print(f"step {step} loss {loss.item():.5f}")
