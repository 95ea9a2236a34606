# Gap 1 variant: an nn.ModuleList moved and optimized as one model, unpacked into its parts, which are called.
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

dev = torch_xla.device()
towers = nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 1)]).to(dev)
opt = torch.optim.Adam(towers.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(32, 4).to(dev)
    enc, head = towers
    loss = head(torch.relu(enc(x))).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(loss.item())
