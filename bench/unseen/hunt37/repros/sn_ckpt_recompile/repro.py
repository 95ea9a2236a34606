# spectral_norm blocks run through torch_xla's (reentrant) activation checkpoint: a bf16 model recompiles every step.
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm
from torch_xla.utils.checkpoint import checkpoint
import torch_xla


class Blk(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = spectral_norm(nn.Linear(32, 32)), spectral_norm(nn.Linear(32, 32))

    def forward(self, h):
        return h + 0.5 * self.fc2(F.leaky_relu(self.fc1(h), 0.1))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.blocks, self.head = nn.Linear(2, 32), nn.ModuleList(Blk() for _ in range(3)), nn.Linear(32, 2)

    def forward(self, x):
        h = self.stem(x)
        for b in self.blocks:
            h = checkpoint(b, h)
        return self.head(h)


torch.manual_seed(0)
dev = torch_xla.device()
net = Net().to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
for step in range(12):
    x, y = torch.randn(64, 2).to(dev), torch.randint(0, 2, (64,)).to(dev)
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(loss.item())
