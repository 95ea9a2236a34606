"""Resuming: a float step counter (a device tensor) read back from a checkpoint and moved to the device."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

CKPT = "counter.pt"
dev = xm.xla_device()
model = nn.Linear(4, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = torch.zeros((), device=dev)
if not os.path.exists(CKPT):
    torch.save({"model": nn.Linear(4, 1).state_dict(), "step": torch.tensor(300.0)}, CKPT)
ckpt = torch.load(CKPT, map_location="cpu")
model.load_state_dict(ckpt["model"])
step = ckpt["step"].to(dev)
x = torch.randn(8, 4).to(dev)
for _ in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    step += 1
    xm.mark_step()
    print(loss.item())
print("dtype", step.dtype, "step", step.item())
