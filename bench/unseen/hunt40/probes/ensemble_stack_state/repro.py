import copy
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap
import torch_xla.core.xla_model as xm


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
dev = xm.xla_device()
members = [MLP().to(dev) for _ in range(4)]
params, buffers = stack_module_state(members)
base = copy.deepcopy(members[0]).to("meta")


def run_member(p, b, x):
    return functional_call(base, (p, b), (x,))


opt = torch.optim.Adam(params.values(), lr=1e-3)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(16, 8).to(dev)
    y = x.sum(1, keepdim=True)
    preds = vmap(run_member, in_dims=(0, 0, None))(params, buffers, x)
    loss = ((preds - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", params["fc1.weight"].dtype)
