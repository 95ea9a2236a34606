"""Carrier gap: a hydra-like YAML config holds `env: {XLA_USE_BF16: 1}` and the script applies it
(`os.environ[str(k)] = str(v)`). bf16-migrate on this folder: BFM110 on config.yaml ("reaches no
Python script of the tree") and keeps it; on train.py with --legacy-env it migrates the code and
says nothing of the computed write, which sets the switch again at run time."""
import os
from pathlib import Path

import yaml

cfg = yaml.safe_load(Path(__file__).with_name("config.yaml").read_text())
for k, v in cfg.get("env", {}).items():
    os.environ[str(k)] = str(v)

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

dev = torch_xla.device()
model = nn.Linear(8, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
for step in range(3):
    x = torch.randn(16, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item())
