"""Carrier refusal: `XLA_USE_BF16=1 python3 train.py` in a Makefile recipe: BFM090 "a kind of file
bf16-migrate does not rewrite" (a recipe line is a shell command line; the shell launchers are
rewritten). Refusal, not wrong."""

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

dev = torch_xla.device()
model = nn.Linear(8, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item())
