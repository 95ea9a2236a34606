import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
from torch.distributions import Normal
import torch_xla

device = torch_xla.device()


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 32)
        self.mu = nn.Linear(32, 2)
        self.log_sigma = nn.Linear(32, 2)

    def forward(self, x):
        h = torch.tanh(self.body(x))
        return Normal(self.mu(h), self.log_sigma(h).exp())


model = Head().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    x = torch.randn(16, 8).to(device)
    y = torch.randn(16, 2).to(device)
    dist = model(x)
    loss = torch.nn.functional.gaussian_nll_loss(dist.mean, y, dist.variance)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss dtype", loss.dtype)
