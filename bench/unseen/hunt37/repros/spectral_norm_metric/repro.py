# A Lipschitz report after training: the largest singular value of each weight (ord=2) on the device.
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

torch.manual_seed(0)
dev = torch_xla.device()
net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)).to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(12):
    x, y = torch.randn(32, 4).to(dev), torch.randint(0, 2, (32,)).to(dev)
    loss = nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(loss.item())
with torch.no_grad():
    sigma = torch.stack([torch.linalg.matrix_norm(m.weight, ord=2) for m in net if isinstance(m, nn.Linear)])
    rank = torch.linalg.matrix_rank(net[0].weight)
print("lipschitz bound", sigma.prod().item(), "rank", rank.item(), "dtype", net[0].weight.dtype, sigma.dtype)
