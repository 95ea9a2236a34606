"""Train a small regressor on the TPU, then export an fp32 copy for CPU serving and check it matches."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
X = torch.rand(256, 6)
Y = (X ** 2).sum(1, keepdim=True)

model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(30):
    i = torch.randint(0, 256, (32,))
    loss = nn.functional.mse_loss(model(X[i].to(device)), Y[i].to(device))
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)

# serving runs in fp32; make sure the weights we export are fp32
model = model.float().eval()
with torch.no_grad():
    dev_pred = model(X.to(device))
print("DTYPES", model[0].weight.dtype, dev_pred.dtype)
torch.save(model.state_dict(), "regressor_fp32.pt")

cpu_model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
cpu_model.load_state_dict(torch.load("regressor_fp32.pt"))
with torch.no_grad():
    cpu_pred = cpu_model(X)
print("max |dev - cpu|", float(np.abs(dev_pred.cpu().numpy() - cpu_pred.numpy()).max()))
