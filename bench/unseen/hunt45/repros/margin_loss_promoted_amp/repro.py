import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 4)
        self.dec = nn.Linear(4, 8)

    def forward(self, x):
        return self.net(x)


def pair_loss(za, zb):
    sim = F.normalize(za, dim=1) @ F.normalize(zb, dim=1).T / 0.2
    hardest = (sim - 1e4 * torch.eye(sim.shape[0], device=sim.device)).max(dim=1).values
    ce = F.cross_entropy(sim, torch.arange(sim.shape[0], device=sim.device))
    print("ce", ce.dtype, "margin", hardest.dtype)
    return F.relu(0.05 + hardest - sim.diag()).mean() + ce


dev = xm.xla_device()
torch.manual_seed(0)
model = Enc().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", 5))):
    xa = torch.randn(6, 8).to(dev)
    xb = xa + 0.1 * torch.randn(6, 8).to(dev)
    za, zb = model(xa), model(xb)
    if step < 1:
        loss = F.mse_loss(model.dec(za), xa)
    else:
        loss = pair_loss(za, zb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item(), loss.dtype)
