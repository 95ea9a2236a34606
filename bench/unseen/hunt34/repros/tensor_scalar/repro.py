import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Running:
    def __init__(self, device, eps=1e-4):
        self.mean = torch.zeros(4, device=device)  # the codemod: dtype=torch.bfloat16
        self.count = torch.tensor(eps, device=device)  # bf16 under the switch too; left f32

    def update(self, x):
        tot = self.count + x.shape[0]
        self.mean = self.mean + (x.mean(0) - self.mean) * x.shape[0] / tot
        self.count = tot


device = torch_xla.device()
stats = Running(device)
model = nn.Linear(4, 1).to(device)
x = torch.randn(16, 4).to(device)
stats.update(x)
model(x - stats.mean).pow(2).mean().backward()
torch_xla.sync()
print("dtype", stats.mean.dtype, stats.count.dtype, model.weight.dtype)
