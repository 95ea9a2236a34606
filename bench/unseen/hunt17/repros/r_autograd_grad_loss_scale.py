"""sam_compose amp: verify's loss column for a step made by torch.autograd.grad(loss, params). The script
prints its loss; compare with the legacy / migrated / fp32-ref columns of verify's table (sam_compose's were
exactly 2x the printed loss, its autocast-ctl column 1x)."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

torch.manual_seed(0)
dev = torch_xla.device()
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    x = torch.randn(32, 6).to(dev)
    y = torch.randint(0, 3, (32,)).to(dev)
    loss = F.cross_entropy(model(x), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    for p, g in zip(model.parameters(), grads):
        p.grad = g
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.6f}")
