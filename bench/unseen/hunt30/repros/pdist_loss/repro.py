import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(12):
    x, labels = torch.randn(32, 16).to(device), torch.randint(0, 4, (32,)).to(device)
    emb = model(x)
    spread = F.pdist(F.normalize(emb, dim=1))                     # pairwise distances (uniformity term)
    loss = F.cross_entropy(emb[:, :4], labels) + 0.1 * torch.exp(-2 * spread ** 2).mean().log()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.4f}")
