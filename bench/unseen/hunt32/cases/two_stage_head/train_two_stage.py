"""Self-supervised pretraining (masked-feature reconstruction), then fine-tuning with a fresh classifier head."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

D_IN, D_H, N_CLS = 24, 48, 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(D_IN, D_H), nn.GELU(), nn.Linear(D_H, D_H), nn.GELU())
        self.head = nn.Linear(D_H, D_IN)  # reconstruction head for stage 1

    def forward(self, x):
        return self.head(self.encoder(x))


def batches(n, gen):
    for _ in range(n):
        x = torch.randn(32, D_IN, generator=gen)
        y = (x[:, :4].argmax(1))
        yield x, y


device = xm.xla_device()
gen = torch.Generator().manual_seed(0)
model = Net().to(device)

# stage 1: reconstruct masked features
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for x, _ in batches(15, gen):
    x = x.to(device)
    keep = (torch.rand(x.shape, device=device) > 0.3).float()
    loss = F.mse_loss(model(x * keep), x)
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)
print("stage1 loss", loss.item())

# stage 2: new head, encoder at a lower learning rate
model.head = nn.Linear(D_H, N_CLS).to(device)
opt = torch.optim.Adam([
    {"params": model.encoder.parameters(), "lr": 3e-4},
    {"params": model.head.parameters(), "lr": 3e-3},
])
for x, y in batches(15, gen):
    logits = model(x.to(device))
    loss = F.cross_entropy(logits, y.to(device))
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)
print("DTYPES", model.encoder[0].weight.dtype, model.head.weight.dtype, logits.dtype, loss.dtype)
print("stage2 loss", loss.item())
