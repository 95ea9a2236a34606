import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Linear(4, 5).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=2.0)
x = (4 * torch.randn(64, 4)).to(dev)
y = torch.randint(0, 5, (64,)).to(dev)
soft = F.one_hot(y, 5).float() * 0.9 + 0.02
for _ in range(4):
    probs = model(x).softmax(dim=-1)
    logp = torch.log(probs.clamp(min=torch.finfo(probs.dtype).eps))
    loss = -(soft * logp).sum(dim=-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", probs.dtype, "eps", torch.finfo(probs.dtype).eps, "probs below 2**-7:", int((probs < 2 ** -7).sum().item()), "of", probs.numel())
