"""Verify gap 5: temperature scaling with L-BFGS; the forward runs once (logits detached), the optimizer
steps a single scalar. amp: the forward goes under autocast, the L-BFGS math stays f32 (as amp keeps an
optimizer's). verify --mode amp FAILs precision: "no matmul of the migrated step graph is bf16" (the
step graph's matmuls are L-BFGS's own dot products, bf16 only under the legacy switch)."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
clf = nn.Linear(6, 4).to(device).eval()
x, y = torch.randn(256, 6) * 3, torch.randint(0, 4, (256,))
logits, labels = clf(x.to(device)).detach(), y.to(device)
log_t = torch.zeros(1, device=device, requires_grad=True)
opt = torch.optim.LBFGS([log_t], lr=0.5, max_iter=2)


def closure():
    opt.zero_grad()
    nll = F.cross_entropy(logits / log_t.exp(), labels)
    nll.backward()
    return nll


for it in range(12):
    nll = opt.step(closure)
    torch_xla.sync()
    print(f"iter {it} nll {nll.item():.5f}")
