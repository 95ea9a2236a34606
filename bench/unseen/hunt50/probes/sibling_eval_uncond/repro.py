import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from evalmod import predict

dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 3).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(4, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
preds = predict(model, [torch.randn(4, 8) for _ in range(2)], dev)
print("dtype", preds.dtype)
