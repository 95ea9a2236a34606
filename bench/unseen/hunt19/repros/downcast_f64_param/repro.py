import os

os.environ["XLA_DOWNCAST_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.logit_scale = nn.Parameter(torch.tensor(np.log(1 / 0.07)))  # float64: f32 on the device under DOWNCAST

    def forward(self, a, b):
        return self.proj(a) @ self.proj(b).T * self.logit_scale.exp()


device = torch_xla.device()
model = Scorer().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
for _ in range(5):
    a = torch.randn(16, 8).to(device)
    loss = nn.functional.cross_entropy(model(a, a + 0.1), torch.arange(16, device=device))
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    torch_xla.sync()
print(model.logit_scale.dtype, model.logit_scale.item())
