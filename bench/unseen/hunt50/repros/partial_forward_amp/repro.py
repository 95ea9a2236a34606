import functools
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def compute_loss(model, x, y):
    out = model(x)
    print("forward dtype", out.dtype)
    return F.mse_loss(out, y)


dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 1).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = functools.partial(compute_loss, model)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(16, 8).to(dev)
    y = x.sum(1, keepdim=True).to(dev)
    loss = loss_fn(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
with torch.no_grad():
    print("eval", model(torch.randn(2, 8).to(dev)).dtype)
