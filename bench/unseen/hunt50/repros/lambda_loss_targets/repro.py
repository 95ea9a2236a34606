import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.utils._pytree import tree_map

class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(x)


LOSSES = {"mse": lambda out, tgt: F.mse_loss(out, tgt["y"])}


dev = xm.xla_device()
torch.manual_seed(0)
model = Reg().to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(16, 8)
    batch = {"inputs": {"x": x}, "targets": {"y": x.sum(1)}}
    batch = tree_map(lambda t: t.to(dev), batch)
    out = model(**batch["inputs"]).squeeze(-1)
    loss = sum(fn(out, batch["targets"]) for fn in LOSSES.values())
    print("loss dtype", loss.dtype)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
