"""No switch: does torch.autocast("xla", bfloat16) reach a functional_call inside torch.func vmap(grad(...))?
(what G2's correct amp migration would do). Prints the dot dtypes of a per-sample gradient's graph."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.func import functional_call, grad, vmap

from _ir import dot_dtypes, ir_dtype

d = torch_xla.device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 3)).to(d)
params = {k: v.detach() for k, v in model.named_parameters()}
x, y = torch.randn(32, 20).to(d), torch.randint(0, 3, (32,)).to(d)


def loss_inside(p, xi, yi):
    with torch.autocast("xla", dtype=torch.bfloat16):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))


def loss_plain(p, xi, yi):
    return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))


g_in = vmap(grad(loss_inside), in_dims=(None, 0, 0))(params, x, y)["0.weight"]
print(f"autocast inside loss_one: grad IR {ir_dtype(g_in)}, dots {dot_dtypes(g_in)}")
with torch.autocast("xla", dtype=torch.bfloat16):
    g_out = vmap(grad(loss_plain), in_dims=(None, 0, 0))(params, x, y)["0.weight"]
print(f"autocast around the vmap call: grad IR {ir_dtype(g_out)}, dots {dot_dtypes(g_out)}")
g_none = vmap(grad(loss_plain), in_dims=(None, 0, 0))(params, x, y)["0.weight"]
print(f"no autocast: grad IR {ir_dtype(g_none)}, dots {dot_dtypes(g_none)}")
torch_xla.sync()
print("synced:", g_in.cpu().dtype, g_out.cpu().dtype)
