import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("peak", torch.ones((), dtype=torch.float64))  # f32 on the device under the switch

    def forward(self, x):
        self.peak.copy_(torch.maximum(self.peak, x.detach().abs().max().double()))
        return self.fc(x) / self.peak.float()


device = torch_xla.device()
model = Scaled().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(8, 4).to(device)).sum().backward()
opt.step()
torch_xla.sync()
print("dtype", model.fc.weight.dtype, model.peak.dtype)
