import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ret_buf = np.zeros(16)  # numpy's default dtype: float64
for t in range(16):
    ret_buf[t] = 0.5 * t
x = torch.randn(16, 4).to(device)
ret = torch.from_numpy(ret_buf).to(device)
v = model(x).squeeze(-1)
idx = torch.randperm(16)[:8]  # a minibatch of the rollout
loss = 0.5 * (ret[idx] - v[idx]).pow(2).mean()
loss.backward()
opt.step()
print("loss dtype", loss.dtype)
