import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from feed import batches

dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for x, y in batches(int(os.environ.get("STEPS", "3")), dev):
    noisy = x + 0.1 * torch.randn_like(x)
    print("augmented dtype", noisy.dtype)
    loss = F.mse_loss(model(noisy), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
