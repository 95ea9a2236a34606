"""amp: BFM035 turns the Python float source of `scatter_` into `(1.0 - eps).to(target.dtype)`.
A float has no .to: the migrated step raises AttributeError (legacy: runs). From accum_vscode/train_tokens.py:56-58."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

CLASSES = 5


def smoothed_ce(logits, y, eps=0.1):
    target = torch.full(logits.shape, eps / (CLASSES - 1), device=logits.device)
    target.scatter_(1, y[:, None], 1.0 - eps)
    return -(target * logits.log_softmax(-1)).sum(-1).mean()


device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, CLASSES).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(16, 8).to(device), torch.randint(0, CLASSES, (16,)).to(device)
    loss = smoothed_ce(model(x), y)
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
