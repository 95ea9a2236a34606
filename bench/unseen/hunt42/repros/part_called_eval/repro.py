"""A model built from parts held in their own names (`model = nn.Sequential(encoder, head)`); the training step calls
`model`, the evaluation calls the part `encoder` directly, on a tensor moved to the device once. The codemod casts the
inputs at `model(...)` calls only: `encoder(bank_x)` gets an f32 input (stochastic) / runs outside autocast (amp)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

dev = torch_xla.device()
torch.manual_seed(0)
bank_x = torch.randn(64, 8).to(dev)
encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
head = nn.Linear(16, 1)
model = nn.Sequential(encoder, head).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "6"))):
    x = torch.randn(32, 8).to(dev)
    loss = (model(x).squeeze(-1) - x[:, 0]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    if step % 2 == 1:
        with torch.no_grad():
            spread = encoder(bank_x).std(0).mean()
        print(step, loss.item(), spread.item())
