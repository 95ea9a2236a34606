"""Floating tensors born from integer ones by arithmetic: `2.0 ** arange`, `arange * 0.5`, `arange.sqrt()`.

Each is f32 by PyTorch's promotion; on the device under the legacy switch it was bf16.
"""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
freqs = 2.0 ** torch.arange(8, device=device)
ramp = torch.arange(8, device=device) * 0.25
for step in range(12):
    x = torch.randn(16, 8, device=device)
    feats = torch.sin(x * freqs) + ramp
    loss = (model(feats) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item(), feats.dtype)
