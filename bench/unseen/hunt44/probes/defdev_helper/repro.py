"""torch.set_default_device(dev); batches and a positional table made by helpers without device=."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402


def make_batch(n=16):
    x = torch.randn(n, 6, 8)
    return x, x.mean((1, 2)).unsqueeze(-1)


def positions(t, d):
    pos = torch.arange(t, dtype=torch.get_default_dtype()).unsqueeze(1)
    return torch.sin(pos / 10.0 ** (torch.arange(d) / d))


torch.set_default_device(xm.xla_device())
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Flatten(), nn.Linear(96, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
pe = positions(6, 8)
for step in range(int(os.environ.get("STEPS", "3"))):
    x, y = make_batch()
    loss = nn.functional.mse_loss(model(x + pe), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
