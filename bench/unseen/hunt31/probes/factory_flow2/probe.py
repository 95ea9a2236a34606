import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(4, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.save({"v": torch.ones(8)}, "/tmp/h31fl.pt")
x = torch.randn(8, 4).to(device)
y = torch.randint(0, 3, (8,)).to(device)
ids = torch.randint(0, 5, (8, 8)).to(device)
a = torch.tensor(float("inf"), device=device)
d = torch.ones_like(ids, dtype=torch.float)
e = ids.new_zeros(8, dtype=torch.float)
f = torch.FloatTensor([0.2] * 8).to(device)
h = torch.load("/tmp/h31fl.pt", map_location=device)["v"]
l = torch.full_like(ids, 0.5, dtype=torch.float32)
n = torch.from_numpy(np.ones(8, np.float32)).to(device)
o = y.new_zeros(8).float()
t = torch.randn_like(ids, dtype=torch.float)
x2 = torch.true_divide(ids, 3)
z = ids.masked_fill(ids == 0, -1).float()
out = model(x)
loss = ((out * d).mean() + (out + e).mean() + (out * f).mean() + (out * h).mean() + (out * l).mean()
        + (out + o).mean() + (out + t).mean() + (out * x2).mean() + (out * z).mean())
terms = {"d": out * d, "e": out + e, "f": out * f, "h": out * h, "l": out * l, "o": out + o, "t": out + t, "x2": out * x2, "z": out * z}
loss.backward(); opt.step(); xm.mark_step()
print(" ".join(f"{k}:{str(v.dtype)[6:]}" for k, v in terms.items()))
