import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(12):
    x, labels = torch.randn(32, 16).to(device), torch.randint(0, 4, (32,)).to(device)
    emb = model(x)
    dist = torch.cdist(emb, emb)                                   # pairwise distances (batch-hard triplet)
    same = labels[:, None] == labels[None, :]
    hardest_pos = (dist * same).max(1).values
    hardest_neg = torch.where(same, dist.max().detach() + 1.0, dist).min(1).values
    loss = torch.relu(hardest_pos - hardest_neg + 0.2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.4f}")
