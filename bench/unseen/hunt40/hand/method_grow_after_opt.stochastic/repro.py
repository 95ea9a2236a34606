import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.extra = nn.ModuleList()

    def grow(self):
        blk = nn.Linear(16, 16).to(self.body.weight.device, dtype=self.body.weight.dtype)
        nn.init.zeros_(blk.weight)
        self.extra.append(blk)
        return blk

    def forward(self, x):
        h = torch.relu(self.body(x))
        for blk in self.extra:
            h = h + blk(h)
        return self.head(h)


torch.manual_seed(0)
dev = xm.xla_device()
model = Net().to(dev)
model.to(torch.bfloat16)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(int(os.environ.get("STEPS", "3"))):
    if step == 1:
        opt.add_param_group({"params": model.grow().parameters()})
    x = torch.randn(4, 8).to(dev, dtype=torch.bfloat16)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", model.extra[0].weight.dtype)
