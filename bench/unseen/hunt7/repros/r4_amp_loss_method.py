"""Refusal of a plain shape (amp): the model is used only through its own methods (`model.nll(x, y)`
in training, as GP and flow models do); amp keeps the switch with BFM021 "`model` is never called
in this file" (it is called: `model.nll`). A right amp rewrite wraps the call:
`with torch.autocast("xla", dtype=torch.bfloat16): loss = model.nll(x, y)`."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def nll(self, x, y):
        return 0.5 * (self.net(x).squeeze(-1) - y).pow(2).mean()


dev = torch_xla.device()
model = Reg().to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(32, 4).to(dev)
    y = x.sum(1)
    loss = model.nll(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item())
