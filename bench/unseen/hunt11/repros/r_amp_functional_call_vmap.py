"""amp: the training forward runs only through torch.func (vmap(grad(...)) of functional_call(model, ...));
the migration wraps the plain `model(xb)` calls (a no_grad monitor and the evaluation) in autocast and leaves
the per-sample gradient computation, i.e. every training matmul, in f32. Legacy: bf16. From
dpsgd_shebang/dp_train.py:31-36, 66, 72."""
import os
import sys

os.environ["XLA_USE_BF16"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.func import functional_call, grad, vmap

from _ir import dot_dtypes, ir_dtype


def per_sample_grads(model, params, x, y):
    def loss_one(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    return vmap(grad(loss_one), in_dims=(None, 0, 0))(params, x, y)


device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 3)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(3):
    xb, yb = torch.randn(32, 20).to(device), torch.randint(0, 3, (32,)).to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    grads = per_sample_grads(model, params, xb, yb)
    if step == 0:
        g = grads["0.weight"]
        print(f"per-sample grad of 0.weight: IR {ir_dtype(g)}; dots in its graph {dot_dtypes(g)}")
    for name, p in model.named_parameters():
        p.grad = grads[name].mean(0)
    xm.optimizer_step(opt)
    with torch.no_grad():
        loss = F.cross_entropy(model(xb), yb)
    xm.mark_step()
    print(f"step {step} monitor loss {loss.item():.4f}")
