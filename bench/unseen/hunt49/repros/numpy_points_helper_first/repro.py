"""A batch brought from NumPy is first handed to a helper of another file (index selection), then gathered and
fed to the model and to a Chamfer loss of that file: stochastic leaves it f32 (only the model's pre-hook casts)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


from lossmod import chamfer, first_points


dev = xm.xla_device()
torch.manual_seed(0)
rng = np.random.default_rng(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 24), nn.Unflatten(1, (8, 3))).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(int(os.environ.get("STEPS", 3))):
    pts = torch.from_numpy(rng.standard_normal((4, 8, 3)).astype(np.float32)).to(dev)
    idx = first_points(pts, 8)
    sub = torch.gather(pts, 1, idx.unsqueeze(-1).expand(-1, -1, 3))
    recon = model(sub)
    loss = chamfer(recon, sub)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtypes", recon.dtype, pts.dtype)
