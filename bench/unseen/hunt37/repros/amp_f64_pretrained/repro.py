# Pretrained vectors from NumPy (float64) in the model; amp leaves them float64 on the device.
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla

torch.manual_seed(0)
vectors = torch.from_numpy(np.random.default_rng(0).normal(size=(50, 8)))  # float64


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(vectors, freeze=False)
        self.out = nn.Linear(8, 3)

    def forward(self, ids):
        return self.out(self.emb(ids).mean(1))


dev = torch_xla.device()
net = Net().to(dev)
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
for step in range(12):
    ids, y = torch.randint(0, 50, (16, 5)).to(dev), torch.randint(0, 3, (16,)).to(dev)
    loss = nn.functional.cross_entropy(net(ids), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(loss.item())
print("dtype emb", net.emb.weight.dtype, "out", net.out.weight.dtype, "loss", loss.dtype)
