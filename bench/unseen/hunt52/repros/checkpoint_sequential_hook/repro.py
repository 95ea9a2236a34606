import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.utils.checkpoint import checkpoint_sequential
from data import make_batch


dev = xm.xla_device()
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(int(os.environ.get("STEPS", 3))):
    x, y = make_batch(dev)
    pred = checkpoint_sequential(model, 2, x, use_reentrant=False)
    loss = F.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", model[0].weight.dtype, pred.dtype)
