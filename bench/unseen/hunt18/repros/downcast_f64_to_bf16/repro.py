import os
os.environ["XLA_DOWNCAST_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

raw = 5e4 + 1e3 * np.sin(np.linspace(0, 20, 256))[:, None] + np.random.default_rng(0).normal(0, 5, (256, 4))
device = torch_xla.device()
x64 = torch.from_numpy(raw).to(device)  # float64: f32 on the device under XLA_DOWNCAST_BF16
x = ((x64 - x64.mean(0)) / x64.std(0)).float()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(x).pow(2).mean()
loss.backward()
xm.optimizer_step(opt)
torch_xla.sync()
print(loss.item())
