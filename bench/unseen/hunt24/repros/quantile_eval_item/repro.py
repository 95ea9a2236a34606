import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 8).to(device), torch.randn(64, 1).to(device)
for _ in range(3):
    loss = F.l1_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
with torch.no_grad():
    resid = (y - model(x)).abs()
    p90 = torch.quantile(resid, 0.9).item()
print("p90", p90)
print("loss dtype", loss.dtype)
