"""Repro: amp wraps the training call in autocast but not a later forward through a method other
than __call__ (model.decode(z) for samples): that forward runs in FP32 without a word (vae_samples)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(16, 4)
        self.dec = nn.Linear(4, 16)

    def decode(self, z):
        return self.dec(z)

    def forward(self, x):
        return self.decode(self.enc(x))


device = xm.xla_device()
model = AE().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(6):
    x = torch.randn(8, 16).to(device)
    loss = (model(x) - x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.4f}")
with torch.no_grad():
    samples = model.decode(torch.randn(4, 4).to(device))
torch_xla.sync()
print("samples", samples.cpu().sum().item())
