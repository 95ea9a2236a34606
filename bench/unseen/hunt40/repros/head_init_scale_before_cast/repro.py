import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(dev)
model[2].weight.data.mul_(0.001)  # head init scale, as in fine-tuning recipes
model[2].bias.data.zero_()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(4, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", model[2].weight.dtype)
