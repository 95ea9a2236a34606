"""The whole loop inside `with torch.device(dev):`; batches made by a helper without device=."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402


def make_batch(n=16):
    x = torch.randn(n, 8)
    return x, x.sum(-1, keepdim=True).tanh()


dev = xm.xla_device()
torch.manual_seed(0)
with torch.device(dev):
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(int(os.environ.get("STEPS", "3"))):
        x, y = make_batch()
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(loss.item())
