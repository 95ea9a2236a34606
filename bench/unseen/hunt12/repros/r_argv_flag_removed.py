"""G1: the switch is written under `if "--bf16" in sys.argv:` whose body also removes the flag from sys.argv
(so that argparse does not see it). The migration guards its changes with the same condition, evaluated
again later, when the flag is gone: nothing is cast, amp's autocast is disabled. Run with --bf16."""
import os
import sys

if "--bf16" in sys.argv:
    sys.argv.remove("--bf16")
    os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from _ir import dot_dtypes, ir_dtype

torch.manual_seed(0)
device = torch_xla.device()
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4).to(device)
y = torch.randn(16, 1).to(device)
out = model(x)
loss = (out - y).pow(2).mean()
print("model output: IR", ir_dtype(out), "; dots in its graph", dot_dtypes(out))
loss.backward()
opt.step()
xm.mark_step()
print("weight after one step: IR", ir_dtype(model[0].weight), "; loss", round(loss.item(), 5))
