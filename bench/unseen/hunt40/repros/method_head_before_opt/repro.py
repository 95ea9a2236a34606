import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)

    def reset_head(self, n_out):
        self.head = nn.Linear(16, n_out, device=self.body.weight.device)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


torch.manual_seed(0)
dev = xm.xla_device()
model = Net().to(dev)
model.reset_head(3)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(4, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", model.head.weight.dtype)
