"""G3 probe: the model called directly (model(x)) returns a Normal; its log_prob target y is a float device tensor."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
from torch.distributions import Normal


class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 2)

    def forward(self, x):
        mu, log_s = self.body(x).unbind(-1)
        return Normal(mu, log_s.exp())


dev = torch_xla.device()
model = Reg().to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(16, 4).to(dev)
    y = torch.randn(16).to(dev)
    dist = model(x)
    loss = -dist.log_prob(y).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("step", step, "loss", loss.item())
