import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

D = 16
dev = xm.xla_device()
backbone = nn.Sequential(nn.Linear(8, D), nn.ReLU()).to(dev).eval()
backbone.requires_grad_(False)
X = torch.randn(32, 8)
cache = torch.empty(32, D, device=dev)
with torch.no_grad():
    for i in range(0, 32, 8):
        cache[i:i + 8] = backbone(X[i:i + 8].to(dev))
y = torch.randint(0, 3, (32,)).to(dev)
model = nn.Linear(D, 3).to(dev)
model.scale = nn.Parameter(torch.ones(D, device=dev))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", 3))):
    loss = F.cross_entropy(model(cache * model.scale), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", cache.dtype, model.scale.dtype, model.weight.dtype)
