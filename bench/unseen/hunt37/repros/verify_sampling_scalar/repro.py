# Sampling with a temperature and a top-p threshold given as Python floats (0.8, 0.9): bf16 in the legacy graph.
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

torch.manual_seed(0)
dev = torch_xla.device()
V = 64
lm = nn.Sequential(nn.Embedding(V, 32), nn.Linear(32, V)).to(dev).eval()
tok = torch.zeros(8, dtype=torch.long).to(dev)
with torch.no_grad():
    for step in range(24):
        probs = torch.softmax(lm(tok) / 0.8, -1)
        sorted_p, order = probs.sort(-1, descending=True)
        keep = sorted_p.cumsum(-1) - sorted_p < 0.9
        pick = torch.multinomial(sorted_p * keep, 1)
        tok = order.gather(-1, pick).squeeze(-1)
        logp = torch.log(probs.gather(-1, tok[:, None])).mean()
        torch_xla.sync()
        print(f"step {step} logp {logp.item():.5f} ids {tok.cpu().tolist()}")
