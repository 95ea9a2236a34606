import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
y = torch.randn(8, 2).to(device)
out = model(x)
loss = F.smooth_l1_loss(out, y, beta=1 / 9)
loss.backward()
opt.step()
print(loss.item())
