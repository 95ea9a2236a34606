import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        return torch.linalg.householder_product(h, h[0]) * 1


dev = torch_xla.device()
model = Net().to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(4, 8).to(dev)
    out = model(x)
    loss = out.float().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("step", step, "loss", round(loss.item(), 4))
print("DTYPES weight", model.lin.weight.dtype, "out", out.dtype)
