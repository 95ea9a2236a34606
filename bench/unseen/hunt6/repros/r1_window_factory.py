"""Repro: a window made in forward by torch.hann_window (no dtype) is not followed (fft_audio)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class Front(nn.Module):
    def __init__(self, n=16):
        super().__init__()
        self.n = n
        self.lin = nn.Linear(n, 4)

    def forward(self, wav):
        frames = wav.unfold(-1, self.n, self.n // 2)
        window = torch.hann_window(self.n, device=wav.device)
        return self.lin(frames * window).mean(1)


device = xm.xla_device()
model = Front().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(8, 64).to(device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.4f}")
