"""amp: the model handed to a function of a sibling module, which calls it: that forward stays outside autocast."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from helper import predict

dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 8), torch.randn(32, 2)
for step in range(int(os.environ.get("STEPS", 3))):
    loss = nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
print(predict(model, x[:4].to(dev)).dtype)
