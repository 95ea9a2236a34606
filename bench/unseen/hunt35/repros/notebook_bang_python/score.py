"""Inference script started by a notebook cell (`!python score.py`) after `%env XLA_USE_BF16=1`."""
import torch
import torch.nn as nn
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
net = nn.Linear(8, 2).to(device).eval()
with torch.no_grad():
    out = net(torch.randn(4, 8).to(device))
print(out.cpu().numpy())
