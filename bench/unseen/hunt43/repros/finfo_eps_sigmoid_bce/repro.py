import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Linear(8, 3).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = (3 * torch.randn(64, 8)).to(dev)
y = (torch.rand(64, 3) < 0.2).float().to(dev)
for _ in range(4):
    p = torch.sigmoid(model(x))
    eps = torch.finfo(p.dtype).eps
    loss = -(y * torch.log(p + eps) + (1 - y) * torch.log(1 - p + eps)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", p.dtype, "eps", eps)
