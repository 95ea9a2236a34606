import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(12):
    x, y = torch.randn(32, 8).to(device), torch.randint(0, 3, (32,)).to(device)
    w = torch.where(y == 0, 0.2, 1.0)                       # down-weight the background class
    loss = (w * F.cross_entropy(model(x), y, reduction="none")).sum() / w.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(w.dtype, loss.dtype)
    print(f"{loss.item():.4f}")
