import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Linear(4, 2).to(device)
mse = nn.MSELoss()  # a torch.nn loss module, under a name without "loss"/"criterion"
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
y = torch.randn(8, 2).to(device)
out = model(x)
loss = mse(out, y)
loss.backward()
opt.step()
print("loss dtype", loss.dtype)
