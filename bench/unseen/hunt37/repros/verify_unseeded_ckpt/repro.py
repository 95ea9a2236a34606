# Inference from a checkpoint the script makes, unseeded, when it is missing (first run of a scoring job).
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

net = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 1))
if not os.path.exists("scorer.pt"):
    torch.save(net.state_dict(), "scorer.pt")
net.load_state_dict(torch.load("scorer.pt"))
dev = torch_xla.device()
net.to(dev).eval()
table = torch.randn(64, 6, generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    for step, start in enumerate(range(0, 64, 16)):
        prob = torch.sigmoid(net(table[start:start + 16].to(dev))).squeeze(-1)
        torch_xla.sync()
        print(f"step {step} probs {[round(p, 4) for p in prob.cpu().tolist()]}")
