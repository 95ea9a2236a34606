import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Diffusion:
    def __init__(self, steps, device):
        betas = np.linspace(1e-4, 0.05, steps)
        ac = np.cumprod(1.0 - betas)
        self.sqrt_ac = torch.tensor(np.sqrt(ac), device=device)
        self.sqrt_1m = torch.from_numpy(np.sqrt(1 - ac)).to(device)
        self.coefs = [torch.tensor(v, device=device) for v in (betas, ac)]

    def q_sample(self, x0, t, noise):
        return self.sqrt_ac[t][:, None] * x0 + self.sqrt_1m[t][:, None] * noise


dev = xm.xla_device()
diff = Diffusion(50, dev)
model = nn.Linear(2, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x0 = torch.randn(8, 2).to(dev)
    t = torch.randint(0, 50, (8,)).to(dev)
    noise = torch.randn_like(x0)
    x_t = diff.q_sample(x0, t, noise)
    loss = ((model(x_t) - noise) ** 2).mean() + diff.coefs[0][t].mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", diff.sqrt_ac.dtype, diff.sqrt_1m.dtype, diff.coefs[0].dtype, x_t.dtype, loss.dtype)
