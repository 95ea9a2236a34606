import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)

    def forward(self, z):
        return self.fc(z)

dev = xm.xla_device()
dec = Decoder().to(dev)
dec.requires_grad_(False)
enc = nn.Linear(8, 4).to(dev)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", 3))):
    x = torch.randn(16, 8).to(dev)
    loss = F.mse_loss(dec(enc(x)), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", dec.fc.weight.dtype, enc.weight.dtype)
