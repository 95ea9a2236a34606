"""A device tensor made from a list of Python floats inside torch.stack, next to a bf16 tensor (an LR-finder curve)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

dev = xm.xla_device()
model = nn.Linear(4, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
lrs = torch.logspace(-3, -1, 3, device=dev)
history = []
x = torch.randn(8, 4).to(dev)
for i in range(3):
    opt.param_groups[0]["lr"] = lrs[i].item()
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    xm.mark_step()
    history.append(loss.item())
    print(loss.item())
curve = torch.stack([lrs, torch.tensor(history, device=dev)])
best = curve[0, curve[1].argmin()] / 10
print("dtype", curve.dtype, best.dtype, best.item())
