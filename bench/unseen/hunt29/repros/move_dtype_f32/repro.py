"""A per-sample weight moved with an explicit float32 dtype: `.to(device, dtype=torch.float32)`.

Under the legacy switch every f32 tensor on the device is bf16, so `w` is bf16 and the weighted loss is bf16.
"""
import os

os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
rng = np.random.default_rng(0)
for step in range(12):
    x = torch.from_numpy(rng.normal(size=(32, 8)).astype(np.float32)).to(device)
    y = torch.from_numpy(rng.normal(size=32).astype(np.float32)).to(device)
    w = torch.from_numpy(rng.uniform(0.5, 1.5, 32)).to(device, dtype=torch.float32)
    loss = (w * (model(x).squeeze(-1) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item(), loss.dtype, w.dtype)
