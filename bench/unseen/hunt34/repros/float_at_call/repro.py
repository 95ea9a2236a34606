import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
obs = torch.as_tensor(np.random.default_rng(0).normal(size=(8, 6)), device=device)  # float64
out = model(obs.float())  # under the switch `.float()` on the device was bf16
loss = out.pow(2).mean()
loss.backward()
opt.step()
torch_xla.sync()
print("dtype", model[0].weight.dtype, out.dtype, loss.dtype)
