import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def pair_loss(za, zb):
    sim = F.normalize(za, dim=1) @ F.normalize(zb, dim=1).T / 0.2
    return F.cross_entropy(sim, torch.arange(sim.shape[0], device=sim.device))


dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 4).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", 4))):
    xa = torch.randn(6, 8).to(dev)
    xb = xa + 0.1 * torch.randn(6, 8).to(dev)
    za, zb = model(xa), model(xb)
    loss = pair_loss(za, zb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item(), loss.dtype)
