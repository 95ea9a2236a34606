import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
coef = torch.linspace(0.1, 1.0, 50).to(dev)
model = nn.Linear(2, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x0 = torch.randn(8, 2).to(dev)
    t = torch.randint(0, 50, (8,)).to(dev)
    x_t = coef.gather(0, t).float()[:, None] * x0
    loss = model(x_t).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", coef.dtype, x_t.dtype, model.weight.dtype)
