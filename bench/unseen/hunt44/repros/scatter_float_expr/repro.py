"""amp: a scatter whose value is a Python float computed from a config attribute, in the loss under autocast."""
import os
from types import SimpleNamespace

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

cfg = SimpleNamespace(n_cls=4, eps=0.1)
N_CLS = cfg.n_cls
dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, N_CLS).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(16, 8, device=dev)
    y = torch.randint(0, N_CLS, (16,), device=dev)
    logits = model(x)
    target = torch.full_like(logits, cfg.eps / cfg.n_cls).scatter(-1, y.unsqueeze(-1), 1 - cfg.eps + cfg.eps / cfg.n_cls)
    loss = -(target * logits.log_softmax(-1)).sum(-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
