import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
t = torch.from_numpy(np.linspace(0, 6, 64)[:, None]).to(device)
u = torch.sin(t)
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)).double().to(device)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for _ in range(3):
    loss = ((net(t) - u) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
# legacy: the f64 model and data are bf16 on the device
print("dtype", next(net.parameters()).dtype, loss.dtype)
