"""Checkpoint averaging on the device: the first state dict moved with `.to(dev).clone()` in a comprehension."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

dev = xm.xla_device()
torch.manual_seed(0)
sds = [nn.Linear(8, 4).state_dict() for _ in range(3)]
avg = {k: v.to(dev).clone() for k, v in sds[0].items()}
for sd in sds[1:]:
    for k, v in sd.items():
        avg[k] += v.to(dev)
for k in avg:
    avg[k] /= len(sds)
model = nn.Linear(8, 4).to(dev)
model.load_state_dict(avg)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 8).to(dev)
for _ in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", avg["weight"].dtype, model.weight.dtype)
