import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from optim import build_optimizer

device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = build_optimizer(model.named_parameters(), 1e-3)
loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
loss.backward()
xm.optimizer_step(opt)
torch_xla.sync()
print(loss.item())
