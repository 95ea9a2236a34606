import os
from dataclasses import dataclass

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


@dataclass
class TrainState:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    step: int = 0


device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
state = TrainState(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
data = torch.randn(64, 8)
target = torch.randn(64, 2)
for i in range(0, 64, 16):
    xb, yb = data[i:i + 16].to(device), target[i:i + 16].to(device)
    loss = F.mse_loss(state.model(xb), yb)
    state.optimizer.zero_grad()
    loss.backward()
    state.optimizer.step()
    state.step += 1
    torch_xla.sync()
print("loss dtype", loss.dtype)
print(loss.item())
