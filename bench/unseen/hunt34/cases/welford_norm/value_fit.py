"""Fit a value network on raw observations normalised by running statistics that
live on the device (the RunningMeanStd of RL codebases), then export the statistics."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class RunningMeanStd:
    """Parallel-variance (Chan et al.) update of a mean and a variance."""

    def __init__(self, shape, device, eps=1e-4):
        self.mean = torch.zeros(shape, device=device)
        self.var = torch.ones(shape, device=device)
        self.count = torch.tensor(eps, device=device)

    def update(self, x):
        b_mean, b_var, b_count = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = b_mean - self.mean
        tot = self.count + b_count
        self.mean = self.mean + delta * b_count / tot
        m2 = self.var * self.count + b_var * b_count + delta.pow(2) * self.count * b_count / tot
        self.var = m2 / tot
        self.count = tot

    def normalize(self, x, clip=5.0):
        return torch.clamp((x - self.mean) / torch.sqrt(self.var + 1e-8), -clip, clip)


rng = np.random.default_rng(0)
torch.manual_seed(0)
device = torch_xla.device()
D = 8
scale = rng.uniform(0.5, 20.0, size=D).astype(np.float32)
coef = rng.normal(size=D).astype(np.float32)
rms = RunningMeanStd((D,), device)
critic = nn.Sequential(nn.Linear(D, 64), nn.Tanh(), nn.Linear(64, 1)).to(device)
opt = torch.optim.Adam(critic.parameters(), lr=3e-3)

for step in range(10):
    raw = rng.normal(loc=3.0, size=(128, D)).astype(np.float32) * scale
    ret = np.tanh((raw / scale - 3.0) @ coef).astype(np.float32)
    obs = torch.from_numpy(raw).to(device)
    target = torch.from_numpy(ret).to(device)
    rms.update(obs)
    value = critic(rms.normalize(obs)).squeeze(-1)
    loss = (value - target).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")

print("DTYPES mean", rms.mean.dtype, "count", rms.count.dtype, "value", value.dtype)
print(f"count {rms.count.item():.1f}")
np.savez("obs_rms.npz", mean=rms.mean.cpu().numpy(), var=rms.var.cpu().numpy(), count=rms.count.item())
torch.save(critic.state_dict(), "critic.pt")
