import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = nn.Linear(6, 1).to(device)
rng = np.random.default_rng(0)
feats = rng.normal(size=(64, 6))
targets = rng.normal(size=(64, 1))
mean = torch.as_tensor(feats.mean(0), device=device)
std = torch.as_tensor(feats.std(0), device=device)
arrs = [targets[i:i + 16] for i in range(0, 64, 16)]
with torch.no_grad():
    tot = 0.0
    for i, a in enumerate(arrs):
        xb = (torch.as_tensor(feats[i * 16:(i + 1) * 16], device=device) - mean) / std
        yb = torch.stack([torch.from_numpy(r) for r in a]).to(device)
        err = model(xb) - yb
        tot += err.abs().mean().item()
        print(i, xb.dtype, err.dtype)
print("mae", tot / len(arrs))
