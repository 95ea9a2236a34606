import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4).to(device)
y = torch.randint(0, 3, (16,)).to(device)
target = y.to(x.dtype)
loss = nn.functional.mse_loss(model(x).squeeze(-1), target)
loss.backward()
xm.optimizer_step(opt)
torch_xla.sync()
print(loss.item())
