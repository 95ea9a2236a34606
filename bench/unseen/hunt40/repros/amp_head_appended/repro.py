import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(8, 16)
        self.heads = nn.ModuleList()

    def forward(self, x, task):
        return self.heads[task](torch.relu(self.trunk(x)))


torch.manual_seed(0)
dev = xm.xla_device()
model = MultiHead().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for task in range(2):
    head = nn.Linear(16, 2).to(dev)
    model.heads.append(head)
    opt.add_param_group({"params": head.parameters()})
    for step in range(int(os.environ.get("STEPS", "3"))):
        x = torch.randn(4, 8).to(dev)
        loss = model(x, task).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"{loss.item():.5f}")
print("dtype", model.heads[-1].weight.dtype)
