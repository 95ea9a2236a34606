import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from nets import load_pretrained

dev = xm.xla_device()
backbone = load_pretrained().to(dev)
backbone.requires_grad_(False)
backbone.eval()
with torch.no_grad():
    feats = backbone(torch.randn(32, 8).to(dev))
y = torch.randint(0, 3, (32,)).to(dev)
head = nn.Linear(16, 3).to(dev)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", 3))):
    loss = F.cross_entropy(head(feats), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", backbone[0].weight.dtype, feats.dtype)
