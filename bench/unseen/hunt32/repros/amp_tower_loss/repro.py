import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Dual(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 16)
        self.d = nn.Linear(8, 16)


device = xm.xla_device()
model = Dual().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
xq, xd = torch.randn(4, 8), torch.randn(4, 8)
logits = model.q(xq.to(device)) @ model.d(xd.to(device)).t()
loss = F.cross_entropy(logits, torch.arange(4, device=device))
loss.backward()
opt.step()
print("dtype", model.q.weight.dtype, logits.dtype, loss.dtype)
