import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
ys, xs = torch.meshgrid(torch.arange(4, device=device), torch.arange(4, device=device), indexing="ij")
centers = torch.stack([(xs + 0.5) * 8, (ys + 0.5) * 8], -1).reshape(-1, 2)      # (16, 2)
model = nn.Linear(2, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(12):
    target = torch.randn(16, 2).to(device)
    pred = centers + model(centers / 32)
    loss = (pred - centers - target).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(centers.dtype, pred.dtype, loss.dtype)
    print(f"{loss.item():.4f}")
