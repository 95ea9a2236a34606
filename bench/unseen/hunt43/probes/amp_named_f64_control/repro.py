import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
ac = np.cumprod(1.0 - np.linspace(1e-4, 0.05, 50))
a1 = torch.tensor(ac, device=dev)
a2 = torch.from_numpy(ac).to(dev)
a3 = torch.tensor(ac).to(dev)
a4 = torch.as_tensor(ac, device=dev)
model = nn.Linear(2, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x0 = torch.randn(8, 2).to(dev)
    t = torch.randint(0, 50, (8,)).to(dev)
    x_t = (a1[t] + a2[t] + a3[t] + a4[t])[:, None] * x0
    loss = model(x_t).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
print("dtype", a1.dtype, a2.dtype, a3.dtype, a4.dtype, x_t.dtype)
