import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def build(hidden):
    return nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def train_one(model, dev, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        x = torch.randn(4, 8).to(dev)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"{loss.item():.5f}")
    return model


torch.manual_seed(0)
dev = xm.xla_device()
scores = {}
for hidden in (8, 16):
    model = train_one(build(hidden).to(dev), dev, int(os.environ.get("STEPS", "3")))
    with torch.no_grad():
        scores[hidden] = model(torch.ones(2, 8).to(dev)).cpu()
print("dtype", scores[8].dtype)
