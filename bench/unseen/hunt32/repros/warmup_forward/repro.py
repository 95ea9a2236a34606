import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
with torch.no_grad():
    print("out shape", tuple(model(torch.zeros(1, 4, device=device)).shape))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
loss.backward()
opt.step()
print("dtype", model[0].weight.dtype, loss.dtype)
