import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Cell(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype
        self.wx, self.wh = nn.Linear(1, 8), nn.Linear(8, 8)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 8, dtype=self.dtype, device=x.device)  # bf16 under the switch
        return torch.tanh(self.wx(x) + self.wh(h)).sum()


device = torch_xla.device()
dtype_name = "float32"  # from a config file or a flag
model = Cell(getattr(torch, dtype_name)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(4, 1).to(device))
loss.backward()
opt.step()
torch_xla.sync()
print("dtype", model.wx.weight.dtype, loss.dtype)
