import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.runtime as xr
import torch_xla.distributed.spmd as xs

xr.use_spmd()
n = xr.global_runtime_device_count()
mesh = xs.Mesh(np.arange(n), (n, 1), ("data", "model"))
device = torch_xla.device()
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10)).to(device)
xs.mark_sharding(model[0].weight, mesh, ("model", None))
xs.mark_sharding(model[2].weight, mesh, (None, "model"))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(3):
    x, y = torch.randn(32, 64).to(device), torch.randint(0, 10, (32,)).to(device)
    xs.mark_sharding(x, mesh, ("data", None))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
print("loss", loss.item())
