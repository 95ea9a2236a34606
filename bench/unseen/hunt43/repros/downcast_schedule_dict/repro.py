import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
ac = np.cumprod(1.0 - np.linspace(1e-4, 0.05, 50))
sched = {"a": torch.tensor(np.sqrt(ac), device=dev), "b": torch.tensor(np.sqrt(1.0 - ac), device=dev)}
a, b = sched["a"], sched["b"]
model = nn.Linear(2, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x0 = torch.randn(8, 2, device=dev)
    t = torch.randint(0, 50, (8,), device=dev)
    noise = torch.randn_like(x0)
    x_t = a.gather(0, t).float()[:, None] * x0 + b.gather(0, t).float()[:, None] * noise
    loss = ((model(x_t) - noise) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", a.dtype, b.dtype, x_t.dtype, model.weight.dtype)
