import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model.to(device)
model.float()
model.eval()
win = torch.hann_window(16).to(device, torch.float32)
x = torch.randn(16, 4).to(device, torch.float32)
with torch.no_grad():
    y = model(x)
    z = y.sum(-1) * win
print("1", next(model.parameters()).dtype, y.dtype, z.dtype)
enc = nn.Linear(4, 4).to(device).float()
print("2", enc.weight.dtype)
