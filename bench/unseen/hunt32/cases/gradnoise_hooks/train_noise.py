"""Tabular regressor with annealed gradient noise (Neelakantan et al.) added by per-parameter hooks."""
import argparse
import math
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--eta", type=float, default=0.05)
p.add_argument("--gamma", type=float, default=0.55)
args = p.parse_args()

device = xm.xla_device()
rng = np.random.default_rng(0)
X = rng.normal(size=(512, 12)).astype(np.float32)
w_true = rng.normal(size=(12, 1)).astype(np.float32)
Y = X @ w_true + 0.1 * rng.normal(size=(512, 1)).astype(np.float32)


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.trunc_normal_(m.weight, std=0.02)
        nn.init.zeros_(m.bias)


model = nn.Sequential(nn.Linear(12, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 1)).to(device)
model.apply(init_weights)

state = {"step": 0}


def noise_hook(grad):
    # variance eta / (1 + t)^gamma, annealed with the step
    sigma = math.sqrt(args.eta / (1 + state["step"]) ** args.gamma)
    return grad + sigma * torch.randn(grad.shape, device=grad.device)


for prm in model.parameters():
    prm.register_hook(noise_hook)

opt = torch.optim.Adam(model.parameters(), lr=3e-3)
Xd = torch.from_numpy(X).to(device)
Yd = torch.from_numpy(Y).to(device)

for step in range(args.steps):
    state["step"] = step
    idx = torch.randint(0, 512, (64,), device=device)
    pred = model(Xd[idx])
    loss = F.mse_loss(pred, Yd[idx])
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
    xm.optimizer_step(opt, barrier=True)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    full = model(Xd)
    print("DTYPES", model[0].weight.dtype, full.dtype, model[0].weight.grad.dtype)
    err = (full - Yd).abs().cpu().numpy()
print("mae", float(err.mean()))
