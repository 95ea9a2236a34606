import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.save({"model": nn.Linear(8, 1).state_dict(), "mean": torch.randn(8), "std": torch.rand(8) + 0.5},
           "/tmp/h31_maploc.pt")
device = xm.xla_device()
ckpt = torch.load("/tmp/h31_maploc.pt", map_location=device)
model = nn.Linear(8, 1).to(device)
model.load_state_dict(ckpt["model"])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
mu, sd = ckpt["mean"], ckpt["std"]
x = torch.randn(32, 8).to(device)
y = torch.randn(32, 1).to(device)
z = (x - mu) / sd
loss = ((model(z) - y) ** 2).mean() + 1e-3 * (z ** 2).mean()
loss.backward(); opt.step(); xm.mark_step()
# legacy: mu, sd, z and the loss are bf16 on the device
print("dtype", mu.dtype, z.dtype, loss.dtype)
