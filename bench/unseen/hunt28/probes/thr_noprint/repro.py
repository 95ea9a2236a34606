import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()


def images(n):
    return torch.full((n, 4), 0.5009765625)


model = nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x = images(8).to(device)   # bf16 rounds it to 0.5
    x = (x > 0.5).float()
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
