"""Gap: a factory without dtype in a model method other than forward (here `posterior_mean`,
called after training) is left f32 by the stochastic/gpu-compatible migration; under the
switch it was bf16 on the device. The same `torch.eye` in `forward` or at module level gets
`dtype=` (BFM080). Here the f32 eye promotes K to f32 (the migrated run prints K float32; a right migration,
bf16); with `torch.linalg.solve(K, y)` after it (gp_compose) the run crashes on the dtype mismatch."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class KernelReg(nn.Module):
    def __init__(self):
        super().__init__()
        self.feat = nn.Linear(4, 8)

    def forward(self, x):
        return self.feat(x)

    @torch.no_grad()
    def posterior_mean(self, x, y, x_new):
        f, f_new = self.feat(x), self.feat(x_new)
        K = f @ f.T
        K = K + torch.eye(K.shape[0], device=K.device) * 0.1
        print("K", K.dtype)
        return (f_new @ f.T @ K @ y.unsqueeze(1)).squeeze(1)


dev = torch_xla.device()
model = KernelReg().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 4).to(dev), torch.randn(16).to(dev)
for _ in range(3):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
mu = model.posterior_mean(x, y, torch.randn(8, 4).to(dev))
print(mu.cpu().numpy())
