import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
w = np.random.rand(8)
a = torch.from_numpy(w).to(device, torch.float32)
b = torch.from_numpy(w).to(device, dtype=torch.float32)
c = torch.from_numpy(w).to(device=device, dtype=torch.float32)
d = torch.from_numpy(w).to(device, torch.float)
e = torch.from_numpy(w).to(device).type(torch.float32)
f = torch.from_numpy(w).to(device, torch.float32, non_blocking=True)
g = torch.from_numpy(w).to(device).to(torch.float32)
h = torch.from_numpy(w).float().to(device)
k = torch.arange(8, device=device) / 8
m = 2.0 ** torch.arange(8, device=device)
n = torch.arange(8, device=device) * 0.5
p = torch.arange(8, device=device).float()
q = torch.arange(8, device=device).sqrt()
r = torch.randint(0, 5, (8,), device=device).mean(dtype=torch.float32)
s = torch.bernoulli(torch.full((8,), 0.5, device=device))
for name, t in dict(a=a, b=b, c=c, d=d, e=e, f=f, g=g, h=h, k=k, m=m, n=n, p=p, q=q, s=s).items():
    print(name, t.dtype)
x = torch.randn(8, 4, device=device)
loss = (model(x).squeeze(-1) * (a + b + c + d + e + f + g + h + k + m + n + p + q + s)).mean()
loss.backward()
opt.step()
