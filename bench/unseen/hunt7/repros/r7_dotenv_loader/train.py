"""Carrier gap: the switch is in a .env file that this script loads itself (python-dotenv's
load_dotenv, or the same few lines by hand). bf16-migrate on this folder: BFM110 "reaches no Python
script of the tree" (it does: lines 9-12) and keeps it (a refusal); bf16-migrate on train.py with
--legacy-env migrates the code but does not report lines 9-12, which sets the switch again at run time
(verify: "the migrated run still sees XLA_USE_BF16=1, set by the migrated script itself")."""
import os
from pathlib import Path

for line in Path(__file__).with_name(".env").read_text().splitlines():
    if "=" in line and not line.startswith("#"):
        key, value = line.split("=", 1)
        os.environ.setdefault(key.strip(), value.strip())

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

dev = torch_xla.device()
model = nn.Linear(8, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item())
