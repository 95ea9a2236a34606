import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(4, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.save({"v": torch.ones(8)}, "/tmp/h31fl.pt")
x = torch.randn(8, 4).to(device)
ids = torch.randint(0, 5, (8, 8)).to(device)
e = ids.new_zeros(8, dtype=torch.float)
f = torch.FloatTensor([0.2] * 8).to(device)
h = torch.load("/tmp/h31fl.pt", map_location=device)["v"]
x2 = torch.true_divide(ids, 3)
out = model(x)
loss = (out + e).mean() + (out * f).mean() + (out * h).mean() + (out * x2).mean()
loss.backward(); opt.step(); xm.mark_step()
print("DTYPES", e.dtype, f.dtype, h.dtype, x2.dtype, loss.dtype)
