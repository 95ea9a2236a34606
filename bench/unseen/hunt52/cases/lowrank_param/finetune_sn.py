"""Regressor fine-tuning with parametrizations: a learnt low-rank delta on frozen layers, spectral norm on the
output layer, weight norm on the input layer; layers run through checkpoint_sequential."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm, weight_norm
from torch.utils.checkpoint import checkpoint_sequential

from param_utils import add_low_rank, bake

p = argparse.ArgumentParser()
p.add_argument("--bf16", action="store_true")
p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 16)))
p.add_argument("--export", default="/tmp/hunt52_sn_export.pt")
args = p.parse_args()
if args.bf16:
    os.environ["XLA_USE_BF16"] = "1"

import torch_xla.core.xla_model as xm


def build(d_in=8, d=32):
    layers = nn.Sequential(
        weight_norm(nn.Linear(d_in, d)), nn.Tanh(),
        nn.Linear(d, d), nn.Tanh(),
        nn.Linear(d, d), nn.Tanh(),
        spectral_norm(nn.Linear(d, 1)),
    )
    return layers


torch.manual_seed(0)
dev = xm.xla_device()
model = build()
add_low_rank(model[2])
add_low_rank(model[4])
model = model.to(dev)
opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=5e-3)

g = torch.Generator().manual_seed(2)
X = torch.rand(128, 8, generator=g) * 2 - 1
Y = torch.sin(3 * X[:, :1]) + X[:, 1:2] ** 2
for step in range(args.steps):
    idx = torch.randint(0, 128, (32,), generator=g)
    x = X[idx].to(dev).requires_grad_(True)
    pred = checkpoint_sequential(model, 2, x, use_reentrant=False)
    loss = F.mse_loss(pred, Y[idx].to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.5f}")

with torch.no_grad():
    sigma = model[6].weight.pow(2).sum().sqrt()
bake(model)
torch.save(model.state_dict(), args.export)
sd = torch.load(args.export)
print("DTYPES", model[2].weight.dtype, sd["2.weight"].dtype, sd["6.weight"].dtype)
print(f"sigma {sigma.item():.3f}")
