"""after57 regression (setattr form): a head set on the model between the move and the optimizer. The cast now goes
right after the move (hunt40 gap 2's fix), before `model.fc = nn.Linear(16, 2).to(dev)`, so the new head stays f32 on the
device and meets the bf16 trunk output (at 2d3f9cd the cast went after that line, before the optimizer: right)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.heads = nn.ModuleList()

    def forward(self, x):
        return self.fc(self.trunk(x))


torch.manual_seed(0)
dev = xm.xla_device()
model = Net().to(dev)
model.fc = nn.Linear(16, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(4, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", model.fc.weight.dtype)
