# A ModuleDict of parts moved and optimized as one model, its parts called by key.
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

torch.manual_seed(0)
dev = torch_xla.device()
net = nn.ModuleList([nn.Linear(4, 16), nn.Linear(16, 1)]).to(dev)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for step in range(12):
    x, y = torch.randn(32, 4).to(dev), torch.randn(32, 1).to(dev)
    pred = net[1](torch.relu(net[0](x)))
    loss = nn.functional.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(loss.item())
print("dtype", net[0].weight.dtype, loss.dtype)
