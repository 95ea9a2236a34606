"""hunt10 G (verify): with torch_xla.utils.checkpoint (reentrant), verify's loss column is not the loss: the
recomputation's inner torch.autograd.backward (run on the autograd engine's device thread, where the wrapper's
thread-local "inside" guard is unset) is recorded. Compare the printed losses with verify's table."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
from torch_xla.utils.checkpoint import checkpoint

device = torch_xla.device()
torch.manual_seed(0)
blocks = nn.ModuleList(nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(3)).to(device)
inp, head = nn.Linear(16, 16).to(device), nn.Linear(16, 1).to(device)
model = nn.ModuleDict({"inp": inp, "blocks": blocks, "head": head})
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 16).to(device)
y = x[:, :1].sin()
for step in range(12):
    h = inp(x)
    for b in blocks:
        h = h + checkpoint(b, h)
    loss = ((head(h) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print("step", step, "loss", round(loss.item(), 4))
