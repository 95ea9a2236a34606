"""Gap (stochastic, gpu-compatible): torch.linalg on the model's bf16 output. Under the switch the
tensors said float32 and torch-xla's CPU fallback for cholesky ran in f32; after the migration the
operand is real bf16 and the fallback raises `"cholesky_cpu" not implemented for 'BFloat16'`
(likewise cholesky_solve, linalg.solve, solve_triangular, qr, logdet on the XLA CPU device)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

dev = torch_xla.device()
feat = nn.Linear(4, 8).to(dev)
opt = torch.optim.Adam(feat.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(16, 4).to(dev)
    f = feat(x)
    K = f @ f.T + 0.5 * torch.eye(16, device=dev)
    L = torch.linalg.cholesky(K)
    loss = torch.log(torch.diagonal(L)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item())
