# hunt26 repro: # loop-carried float64 per-slot baseline (NumPy running mean, float64 by NumPy's default) rebuilt on the device at the end of each
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
baseline = torch.zeros(8, device=device)
base_np = np.zeros(8)
for it in range(4):
    obs = torch.randn(8, 4).to(device)
    logp = torch.log_softmax(policy(obs), -1).gather(1, torch.randint(0, 3, (8, 1)).to(device)).squeeze(1)
    ret = torch.randn(8).to(device)
    baseline = torch.as_tensor(base_np, device=device)
    loss = -(logp * (ret - baseline)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    base_np = 0.9 * base_np + 0.1 * ret.detach().cpu().float().numpy()
print("loss dtype", loss.dtype, "baseline dtype", baseline.dtype)
