import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model.to(device)
model.float()
model.eval()
with torch.no_grad():
    y = model(torch.randn(16, 4).to(device))
print(y.sum().item())
