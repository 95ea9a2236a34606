"""Compilations per step of an MLP with spectral_norm blocks, torch_xla checkpoint and a weight-normed head: argv = use_sn use_ckpt use_wn cast_bf16 (1/0). Run under PJRT_DEVICE=CPU (and XLA_USE_BF16=1 for the legacy run)."""
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm, weight_norm
from torch_xla.utils.checkpoint import checkpoint
import torch_xla
import torch_xla.debug.metrics as met

use_sn, use_ckpt, use_wn, cast = (a == "1" for a in sys.argv[1:5])
lin = (lambda m: spectral_norm(m)) if use_sn else (lambda m: m)


class Blk(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = lin(nn.Linear(32, 32)), lin(nn.Linear(32, 32))

    def forward(self, h):
        return h + 0.5 * self.fc2(F.leaky_relu(self.fc1(h), 0.1))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(2, 32)
        self.blocks = nn.ModuleList(Blk() for _ in range(3))
        self.head = weight_norm(nn.Linear(32, 2)) if use_wn else nn.Linear(32, 2)

    def forward(self, x):
        h = self.stem(x)
        for b in self.blocks:
            h = checkpoint(b, h) if use_ckpt else b(h)
        return self.head(h)


torch.manual_seed(0)
dev = torch_xla.device()
net = Net().to(dev)
dt = torch.float32
if cast:
    net.to(torch.bfloat16)
    dt = torch.bfloat16
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True)
counts = []
for step in range(8):
    x = torch.randn(64, 2).to(dev, dtype=dt)
    y = torch.randint(0, 2, (64,)).to(dev)
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    loss.item()
    counts.append(met.metric_data("CompileTime")[0])
print(sys.argv[1:], "compiles after each step", counts)
