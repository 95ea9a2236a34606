"""Under the downcast switch a float64 NumPy buffer was float32 on the device (the windowing ran in f32); with the
module in another file the migration casts the whole module to bf16 (in one file it writes downcast_bf16)."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import torch
import torch_xla.core.xla_model as xm

from frontend import Frontend

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
