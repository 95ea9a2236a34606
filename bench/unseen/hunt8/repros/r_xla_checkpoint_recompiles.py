"""torch_xla.utils.checkpoint on a bf16-cast model compiles new graphs at every step; the same
script under XLA_USE_BF16=1 (set by CKPT_LEGACY=1) compiles none after step 2.
PJRT_DEVICE=CPU python r_xla_checkpoint_recompiles.py; CKPT_LEGACY=1 PJRT_DEVICE=CPU python ..."""
import os
LEGACY = os.environ.get("CKPT_LEGACY") == "1"
if LEGACY:
    os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from torch_xla.utils.checkpoint import checkpoint

USE_CKPT = os.environ.get("CKPT_OFF") != "1"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.utils.parametrizations.spectral_norm(nn.Linear(16, 16)) if os.environ.get("SN") == "1" else nn.Linear(16, 16)

    def forward(self, x):
        return x + (checkpoint(self.fc, x) if USE_CKPT else self.fc(x))


device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(Block(), Block(), nn.Linear(16, 1)).to(device)
if not LEGACY:
    model.to(torch.bfloat16)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
counts = []
for step in range(8):
    x = torch.randn(32, 16).to(device)
    if not LEGACY:
        x = x.to(torch.bfloat16)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    xm.mark_step()
    counts.append(met.metric_data("CompileTime")[0])
print(f"legacy={LEGACY} checkpoint={USE_CKPT} compilations after each step: {counts}")
