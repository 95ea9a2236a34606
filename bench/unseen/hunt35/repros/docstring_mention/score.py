"""Batch scorer. Run on the TPU VM as:  XLA_USE_BF16=1 python score.py"""
import torch
import torch.nn as nn
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device).eval()
with torch.no_grad():
    out = net(torch.randn(64, 8).to(device))
print(out.cpu().numpy()[:2])
