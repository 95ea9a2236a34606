"""stochastic: `(norms > clip).float().mean()` in a helper whose tensors come from a dict of per-sample
gradients (torch.func vmap(grad)) is left f32 (legacy: bf16); the same idiom on the model's output in the
script's body gets `.to(torch.bfloat16)` (BFM154). From dpsgd_shebang/dp_train.py:40-45 (left) and :78 (changed)."""
import os
import sys

os.environ["XLA_USE_BF16"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.func import functional_call, grad, vmap

from _ir import ir_dtype


def per_sample_grads(model, params, x, y):
    def loss_one(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    return vmap(grad(loss_one), in_dims=(None, 0, 0))(params, x, y)


def clipped_share(grads, clip, batch):
    flat = torch.cat([g.reshape(batch, -1) for g in grads.values()], 1)
    norms = flat.norm(dim=1)
    return (norms > clip).float().mean()


device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 8).to(device), torch.randint(0, 3, (64,)).to(device)
grads = per_sample_grads(model, {k: v.detach() for k, v in model.named_parameters()}, x, y)
share = clipped_share(grads, 0.5, 64)
inline = (model(x).norm(dim=1) > 1.0).float().mean()
print(f"helper: IR {ir_dtype(share)}; inline: IR {ir_dtype(inline)}; values {share.item():.6f} {inline.item():.6f}")
