import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class TinyViT(nn.Module):
    def __init__(self, n_patches=16, d=16):
        super().__init__()
        self.embed = nn.Linear(12, d)
        self.pos = nn.Parameter(torch.randn(1, n_patches, d) * 0.02)
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        return self.head((self.embed(x) + self.pos).mean(1))


torch.manual_seed(0)
dev = xm.xla_device()
model = TinyViT().to(dev)
# fine-tune at a higher resolution: 4x4 -> 6x6 patches, position embeddings resampled on the device
with torch.no_grad():
    grid = model.pos.reshape(1, 4, 4, -1).permute(0, 3, 1, 2)
    new = F.interpolate(grid, size=(6, 6), mode="bicubic", align_corners=False)
model.pos = nn.Parameter(new.permute(0, 2, 3, 1).reshape(1, 36, -1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(2, 36, 12).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", model.pos.dtype)
