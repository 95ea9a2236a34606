import os

os.putenv("XLA_USE_BF16", "1")  # read by torch_xla's C++ runtime, not through os.environ

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
loss.backward()
opt.step()
print("DTYPES", model.weight.dtype, loss.dtype)
