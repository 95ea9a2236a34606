# RL rollout: the next observation (NumPy float64) moved to the device at the end of the step, normalised at
# the top of the next one before the policy sees it
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2)).to(device)
opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
obs_mean, obs_std = torch.zeros(4, device=device), torch.ones(4, device=device)
rng = np.random.default_rng(0)
obs = torch.as_tensor(rng.normal(size=(8, 4)), device=device)
for t in range(4):
    obs_n = (obs - obs_mean) / obs_std
    act = policy(obs_n)
    loss = act.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    obs = torch.as_tensor(rng.normal(size=(8, 4)) + act.detach().cpu().float().numpy().sum(1, keepdims=True), device=device)
print("obs_n dtype", obs_n.dtype, "loss dtype", loss.dtype)
