import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
rng = np.random.default_rng(0)
dev = xm.xla_device()
counts = np.bincount(rng.integers(0, 5, size=1000), minlength=5).astype(np.float64)
prior = torch.tensor(0.9 * counts / counts.sum() + 0.02, device=dev)
model = nn.Linear(4, 5).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(16, 4).to(dev)
    y = torch.randint(0, 5, (16,)).to(dev)
    logits = model(x) + torch.log(prior)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", prior.dtype, logits.dtype, loss.dtype)
