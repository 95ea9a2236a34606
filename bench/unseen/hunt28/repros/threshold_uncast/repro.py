import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()


def images(n):
    return torch.full((n, 4), 0.5009765625)   # bf16 rounds it to 0.5


model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = images(8).to(device)
    x = (x > 0.5).float()              # legacy: bf16 0.5 > 0.5 is False -> x all zeros
    loss = model(x).pow(2).mean()      # x all zeros: loss = bias**2, x0.64 each step
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("loss dtype", loss.dtype, loss.item())
