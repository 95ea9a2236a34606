import os
from types import SimpleNamespace
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
state = {"model": model, "opt": torch.optim.SGD(model.parameters(), lr=0.1)}
data, target = torch.randn(64, 8), torch.randn(64, 2)
for i in range(0, 64, 16):
    xb, yb = data[i:i + 16].to(device), target[i:i + 16].to(device)
    loss = F.mse_loss(state["model"](xb), yb)
    state["opt"].zero_grad()
    loss.backward()
    state["opt"].step()
    torch_xla.sync()
print("loss dtype", loss.dtype, loss.item())
