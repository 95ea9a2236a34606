"""G2 (amp): training by forward gradients, `torch.func.jvp` of a closure that calls
`functional_call(model, params, (x,))`; the only plain model call is the evaluation. amp must put the
training forward (the jvp) under autocast; the dots of the directional derivative show where it ran."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, jvp
import torch_xla
import torch_xla.core.xla_model as xm
from _ir import dot_dtypes, ir_dtype

torch.manual_seed(0)
device = torch_xla.device()
model = nn.Sequential(nn.Linear(4, 16), nn.SiLU(), nn.Linear(16, 1)).to(device)
x = torch.randn(32, 4).to(device)
y = torch.randn(32, 1).to(device)

for step in range(2):
    params = {n: p.detach() for n, p in model.named_parameters()}
    tangents = {n: torch.randn_like(p) for n, p in params.items()}

    def loss_of(p):
        return F.mse_loss(functional_call(model, p, (x,)), y)

    loss, dloss = jvp(loss_of, (params,), (tangents,))
    if step == 0:
        print("training jvp: directional derivative IR", ir_dtype(dloss), "; dots in its graph", dot_dtypes(dloss))
    for n, p in model.named_parameters():
        p.data -= 0.01 * dloss * tangents[n]
    xm.mark_step()

with torch.no_grad():
    val = F.mse_loss(model(x), y)
print("evaluation: dots in its graph", dot_dtypes(val), "; val", round(val.item(), 4))
