"""Two-task regressor with homoscedastic uncertainty weighting (learned log-variances outside the model) and a
Fourier-feature encoder whose frequency table is registered lazily on the first forward."""
import math
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class FourierNet(nn.Module):
    def __init__(self, n_freq=8, hidden=32):
        super().__init__()
        self.n_freq = n_freq
        self.mlp = nn.Sequential(nn.Linear(2 * n_freq, hidden), nn.SiLU(), nn.Linear(hidden, 2))

    def forward(self, t):
        if not hasattr(self, "freqs"):
            self.register_buffer("freqs", 2 * math.pi * torch.arange(1, self.n_freq + 1, device=t.device).float(), persistent=False)
        ang = t[:, None] * self.freqs[None, :]
        return self.mlp(torch.cat([ang.sin(), ang.cos()], dim=-1))


device = xm.xla_device()
torch.manual_seed(0)
model = FourierNet().to(device)
log_vars = nn.Parameter(torch.zeros(2, device=device))
opt = torch.optim.Adam([{"params": model.parameters()}, {"params": [log_vars], "lr": 1e-2}], lr=3e-3)

for step in range(30):
    t = torch.rand(64)
    y1 = torch.sin(4 * t) + 0.05 * torch.randn(64)
    y2 = torch.cos(2 * t) + 0.3 * torch.randn(64)
    out = model(t.to(device))
    losses = torch.stack([F.mse_loss(out[:, 0], y1.to(device)), F.mse_loss(out[:, 1], y2.to(device))])
    loss = (torch.exp(-log_vars) * losses + log_vars).sum()
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.3f} sigma {log_vars.detach().exp().sqrt().cpu().tolist()}")
print("DTYPES", model.mlp[0].weight.dtype, model.freqs.dtype, log_vars.dtype, losses.dtype, loss.dtype)
