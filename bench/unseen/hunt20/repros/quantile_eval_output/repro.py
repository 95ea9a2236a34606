import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Linear(8, 4).to(device)
with torch.no_grad():
    out = model(torch.randn(32, 8).to(device))
    p90 = torch.quantile(out, 0.9, dim=0)
print(p90.cpu().tolist())
