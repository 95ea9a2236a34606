import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
alpha = torch.tensor(0.4, device=device)
beta = torch.distributions.Beta(alpha, alpha)                  # mixup coefficient sampled on the device
for step in range(12):
    x, y = torch.randn(32, 16).to(device), torch.randint(0, 4, (32,)).to(device)
    lam = beta.sample((32, 1))
    perm = torch.randperm(32, device=device)
    out = model(lam * x + (1 - lam) * x[perm])
    loss = (lam.squeeze(1) * F.cross_entropy(out, y, reduction="none")
            + (1 - lam.squeeze(1)) * F.cross_entropy(out, y[perm], reduction="none")).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.4f}")
