"""A plain training script; the Makefile beside it sets the legacy bf16 switch on a recipe line that also passes $(STEPS)."""
import argparse

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=3)
args = ap.parse_args()
dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.steps):
    x = torch.randn(16, 8, device=dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
