import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Combine(nn.Module):
    def __init__(self):
        super().__init__()
        self.expert = nn.Linear(8, 8)

    def forward(self, x):
        out = torch.zeros_like(x)
        idx = torch.arange(x.shape[0], device=x.device)
        out = out.index_put((idx,), self.expert(x), accumulate=True)
        return out


device = torch_xla.device()
model = Combine().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 8).to(device)
    out = model(x)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("out dtype", out.dtype, "loss", loss.item())
