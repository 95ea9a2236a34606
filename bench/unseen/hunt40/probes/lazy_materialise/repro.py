import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.LazyLinear(16), nn.ReLU(), nn.LazyLinear(1)).to(dev)
model(torch.zeros(1, 8, device=dev))  # materialise the lazy parameters
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(4, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", model[0].weight.dtype)
