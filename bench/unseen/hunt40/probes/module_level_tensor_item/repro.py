import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x0 = torch.randn(64, 8).to(dev)
with torch.no_grad():
    init = model(x0).std().item()
out_scale = torch.tensor(init, device=dev)
for step in range(3):
    x = torch.randn(4, 8).to(dev)
    loss = (model(x) * out_scale).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", out_scale.dtype)
