import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
ac = np.cumprod(1.0 - np.linspace(1e-4, 0.05, 50))
c1 = torch.tensor(1.0 - ac, device=dev)
c2 = torch.tensor(ac * 0.5, device=dev)
c3 = torch.tensor(np.log(ac), device=dev)
c4 = torch.tensor(ac, device=dev)
c5 = torch.tensor(np.sqrt(1 - ac), device=dev)
c6 = torch.from_numpy(1.0 - ac).to(dev)
model = nn.Linear(2, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(6, 2, device=dev)
print("dtypes", c1.dtype, c2.dtype, c3.dtype, c4.dtype, c5.dtype, c6.dtype)
loss = (model(x) * (c1[:6] + c2[:6] + c3[:6] + c4[:6] + c5[:6] + c6[:6])[:, None].float()).sum()
loss.backward()
opt.step()
