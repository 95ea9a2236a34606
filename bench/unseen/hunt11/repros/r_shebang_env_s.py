#!/usr/bin/env -S XLA_USE_BF16=1 python3
"""The bf16 switch is set by this script's own #! line (env -S), in force when it is run as ./script.
bf16-migrate says "0 finding(s)" and exits 0 (also with --check), in every mode. From dpsgd_shebang/dp_train.py:1.
(The name appears nowhere else in this file, as in dp_train.py.)"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn as nn
import torch_xla

from _ir import ir_dtype

device = torch_xla.device()
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
out = model(torch.randn(3, 4).to(device))
print(f"output says {out.dtype}, IR {ir_dtype(out)}")
