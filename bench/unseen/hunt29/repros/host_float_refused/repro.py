"""A host float64 batch made f32 on the host (`.float()`) before its move; the coefficient comes from a helper."""
import os

os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def batch(n, rng):
    return torch.from_numpy(rng.normal(size=(n, 4)))  # float64, on the host


def coef(table, t):
    return table.gather(0, t.cpu()).float()[:, None].to(t.device)


device = xm.xla_device()
model = nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
table = torch.linspace(0.1, 1.0, 10, dtype=torch.float64)
rng = np.random.default_rng(0)
for step in range(12):
    x0 = batch(16, rng).float().to(device)
    t = torch.randint(0, 10, (16,), device=device)
    xt = coef(table, t) * x0
    loss = (model(xt) - x0).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item())
