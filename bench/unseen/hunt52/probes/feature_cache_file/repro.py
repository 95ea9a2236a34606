import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

CACHE = "/tmp/hunt52_feat_cache.pt"
dev = xm.xla_device()
backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).to(dev).eval()
backbone.requires_grad_(False)
if not os.path.exists(CACHE):
    X = torch.randn(32, 8)
    with torch.no_grad():
        feats = [backbone(X[i:i + 8].to(dev)).cpu() for i in range(0, 32, 8)]
    torch.save(feats, CACHE)
cached = [t.to(dev) for t in torch.load(CACHE)]
y = torch.randint(0, 3, (8,)).to(dev)
head = nn.Linear(16, 3).to(dev)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", 3))):
    loss = F.cross_entropy(head(cached[step % 4]), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", cached[0].dtype, head.weight.dtype)
