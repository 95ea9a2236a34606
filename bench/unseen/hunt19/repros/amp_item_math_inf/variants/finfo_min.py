import os

os.environ["XLA_USE_BF16"] = "1"
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class MaskedPool(nn.Module):
    def __init__(self, dim=8, pad_score=-1e4):
        super().__init__()
        self.pad_score = pad_score
        self.score = nn.Linear(dim, 1)
        self.out = nn.Linear(dim, 2)

    def forward(self, x, lengths):
        s = self.score(x).squeeze(-1).clone()
        pad = torch.arange(x.size(1), device=x.device)[None, :] >= lengths[:, None]
        s[pad] = torch.finfo(s.dtype).min
        w = F.softmax(s, dim=-1)
        return self.out((w[..., None] * x).sum(1))


device = torch_xla.device()
model = MaskedPool().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 6, 8).to(device)
lengths = torch.tensor([6, 3, 2, 5]).to(device)
y = torch.randint(0, 2, (4,)).to(device)
loss = F.cross_entropy(model(x, lengths), y)
loss.backward()
xm.optimizer_step(opt)
torch_xla.sync()
print(loss.item())
