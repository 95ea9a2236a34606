import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Linear(4, 2).to(dev)
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
for _ in range(3):
    x = torch.randn(8, 4).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", model.weight.dtype, "state sum", opt.state[model.weight]["sum"].dtype)
