"""Token ids built with torch.full(..., BOS) (an int fill: int64) are taken for floating and cast to bf16."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

BOS, V = 0, 10
dev = xm.xla_device()
torch.manual_seed(0)


def make_tokens(n, T=6):
    body = torch.randint(1, V, (n, T - 1))
    return torch.cat([torch.full((n, 1), BOS), body], dim=1)   # int64


model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", 3))):
    tokens = make_tokens(4).to(dev)
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), tokens[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
