"""hunt10 G: a loss through torch.cdist (prototype / metric learning). The legacy run's cdist saw f32-labelled
operands; after the model cast they are real bf16 and torch-xla's cdist backward has no bf16 kernel."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
torch.manual_seed(0)
enc = nn.Linear(8, 4).to(device)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(12, 8).to(device)
    y = torch.arange(12).remainder(3).to(device)
    z = enc(x)
    protos = torch.stack([z[y == c].mean(0) for c in range(3)])
    loss = F.cross_entropy(-torch.cdist(z, protos), y)
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print(step, round(loss.item(), 4))
