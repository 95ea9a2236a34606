"""A Chamfer loss (torch.cdist) in another file that nothing else there marks for migration: the batch is cast to
bf16, but the cdist there keeps its direct kernel, whose backward has no bf16 on the device (BFM156 in one file)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


from lossmod import chamfer


dev = xm.xla_device()
torch.manual_seed(0)
rng = np.random.default_rng(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 24), nn.Unflatten(1, (8, 3))).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(int(os.environ.get("STEPS", 3))):
    pts = torch.from_numpy(rng.standard_normal((4, 8, 3)).astype(np.float32)).to(dev)
    recon = model(pts)
    loss = chamfer(recon, pts)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtypes", recon.dtype, pts.dtype)
