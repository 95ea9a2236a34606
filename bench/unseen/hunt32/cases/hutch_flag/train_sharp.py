"""Track the Hessian trace (Hutchinson's estimator) of a small CNN's loss while it trains."""
import os
import sys

if "--bf16" in sys.argv:
    os.environ["XLA_USE_BF16"] = "1"
elif "--half" in sys.argv:
    os.environ["XLA_USE_FP16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def hutchinson_trace(loss, params, n_probe=2):
    grads = torch.autograd.grad(loss, params, create_graph=True)
    est = 0.0
    for _ in range(n_probe):
        vs = [torch.randint_like(p, 2) * 2 - 1 for p in params]  # Rademacher
        hv = torch.autograd.grad(grads, params, grad_outputs=vs, retain_graph=True)
        est = est + sum((h * v).sum() for h, v in zip(hv, vs))
    return est / n_probe


device = xm.xla_device()
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.Tanh(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 3)).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
params = [p for p in net.parameters() if p.requires_grad]
traces = []
for step in range(20):
    x = torch.randn(16, 1, 12, 12, device=device)
    y = (x.mean((1, 2, 3)) > 0).long() + (x.std((1, 2, 3)) > 1).long()
    loss = F.cross_entropy(net(x), y)
    if step % 5 == 0:
        tr = hutchinson_trace(loss, params)
        traces.append(tr.detach())
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)

curve = torch.stack(traces).cpu()
print("DTYPES", net[0].weight.dtype, x.dtype, loss.dtype, curve.dtype)
print("trace", [round(t, 2) for t in curve.tolist()])
