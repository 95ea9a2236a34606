import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
enc = nn.Linear(8, 16).to(device)
with torch.no_grad():
    e = enc(torch.randn(64, 8).to(device))
    sims = e @ e.T
    q = torch.quantile(sims.float(), torch.tensor([0.05, 0.5, 0.95], device=device))
print(q.cpu().tolist())
