import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
loss = F.mse_loss(model(x), x)
loss.backward()
opt.step()
model[2] = nn.Linear(8, 3).to(device)  # stage 2: a fresh head
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = F.cross_entropy(model(x), torch.zeros(8, dtype=torch.long, device=device))
loss.backward()
opt.step()
print("dtype", model[0].weight.dtype, model[2].weight.dtype, loss.dtype)
