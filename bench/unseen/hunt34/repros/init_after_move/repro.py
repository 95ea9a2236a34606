import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


def init(m):
    if isinstance(m, nn.Linear):
        nn.init.orthogonal_(m.weight)


device = torch_xla.device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
model.apply(init)  # initialised on the device, after the move
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(6):
    x = torch.randn(32, 8).to(device)
    loss = (model(x).squeeze(-1) - x.sum(1)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.4f}")
print("dtype", model[0].weight.dtype, loss.dtype)
