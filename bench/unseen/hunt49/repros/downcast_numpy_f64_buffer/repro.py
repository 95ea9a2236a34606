"""XLA_DOWNCAST_BF16: a window registered as a buffer from NumPy (float64) was float32 on the device under the
switch, so the windowing ran in f32; the migration casts the whole module to bf16."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Frontend(nn.Module):
    def __init__(self, n=16):
        super().__init__()
        self.register_buffer("window", torch.from_numpy(np.hanning(n)))
        self.proj = nn.Linear(n, 8)

    def forward(self, frames):
        w = (frames * self.window).float()
        return self.proj(w)


dev = xm.xla_device()
torch.manual_seed(0)
model = Frontend().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(int(os.environ.get("STEPS", 3))):
    x = torch.randn(4, 5, 16).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtypes", model.window.dtype, model.proj.weight.dtype)
