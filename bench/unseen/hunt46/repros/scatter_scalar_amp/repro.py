"""Gap 2: amp rewrites a Python-float scatter_ value into `(1.0 - eps).to(out.dtype)`."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla  # noqa: E402


def smooth_targets(y, n, eps):
    out = torch.full((y.size(0), n), eps / (n - 1), device=y.device)
    out.scatter_(1, y.unsqueeze(1), 1.0 - eps)
    return out


dev = torch_xla.device()
torch.manual_seed(0)
model = nn.Linear(6, 3).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(8, 6).to(dev)
    y = torch.randint(0, 3, (8,)).to(dev)
    logp = torch.log_softmax(model(x), dim=-1)
    loss = -(smooth_targets(y, 3, 0.1) * logp).sum(-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(step, loss.item(), "DTYPES", next(model.parameters()).dtype, loss.dtype)
