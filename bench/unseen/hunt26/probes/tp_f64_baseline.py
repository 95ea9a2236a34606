# loop-carried float64 baseline (NumPy mean of past returns) rebuilt on the device at the end of each
# iteration and read at the top of the next one
import os

os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
policy = nn.Linear(4, 3).to(device)
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
baseline = torch.zeros((), device=device)
returns_hist = []
for it in range(4):
    obs = torch.randn(8, 4).to(device)
    logp = torch.log_softmax(policy(obs), -1).gather(1, torch.randint(0, 3, (8, 1)).to(device)).squeeze(1)
    ret = torch.randn(8).to(device)
    loss = -(logp * (ret - baseline)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    returns_hist.append(ret.mean().item())
    baseline = torch.as_tensor(np.mean(returns_hist[-10:]), device=device)
print("loss dtype", loss.dtype, "baseline dtype", baseline.dtype)
