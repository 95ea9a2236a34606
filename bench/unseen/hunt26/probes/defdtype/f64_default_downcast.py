# a PINN-style script: float64 by default, XLA_DOWNCAST_BF16 so the device holds it in f32
import os
os.environ["XLA_DOWNCAST_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

torch.set_default_dtype(torch.float64)
device = torch_xla.device()
model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(3):
    t = torch.rand(64, 1).to(device).requires_grad_()
    u = model(t)
    du = torch.autograd.grad(u.sum(), t, create_graph=True)[0]
    loss = ((du + u) ** 2).mean() + (model(torch.zeros(1, 1, device=device)) - 1.0).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("param dtype", next(model.parameters()).dtype, "loss dtype", loss.dtype)
