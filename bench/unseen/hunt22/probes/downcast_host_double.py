import os
os.environ["XLA_DOWNCAST_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x64 = np.random.randn(64, 4)
y64 = x64.sum(1, keepdims=True)
for i in range(0, 64, 16):
    xb = torch.from_numpy(x64[i:i + 16]).float().to(device)
    yb = torch.from_numpy(y64[i:i + 16]).float().to(device)
    loss = ((model(xb) - yb) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    pred = model(torch.from_numpy(x64).float().to(device))
pred_host = pred.cpu().double()
rmse = torch.sqrt(((pred_host - torch.from_numpy(y64)) ** 2).mean())
resid = pred.detach().cpu().numpy().astype(np.float64) - y64
print(rmse.dtype, rmse.item(), resid.dtype)
