import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
y = torch.randint(0, 3, (8,)).to(device)
valid = torch.randint(0, 2, (8,)).to(device)
logits = model(x)
w = torch.ones_like(valid, dtype=torch.float)
losses = {"ce": F.cross_entropy(logits, y), "reg": (logits.pow(2).mean(-1) * w).mean()}
loss = sum(losses.values())
loss.backward(); opt.step(); xm.mark_step()
# legacy: w and the loss are bf16 on the device
print("dtype", w.dtype, losses["reg"].dtype, loss.dtype)
