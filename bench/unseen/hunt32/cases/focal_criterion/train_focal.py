"""Imbalanced 3-class classifier with a focal loss module holding per-class weights, and a calibration
temperature fitted afterwards on held-out logits."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class FocalLoss(nn.Module):
    def __init__(self, alpha, gamma=2.0):
        super().__init__()
        self.gamma = gamma
        self.register_buffer("alpha", torch.as_tensor(alpha, dtype=torch.float32))

    def forward(self, logits, target):
        logp = F.log_softmax(logits, dim=-1).gather(1, target[:, None]).squeeze(1)
        p = logp.exp()
        return (-self.alpha[target] * (1 - p) ** self.gamma * logp).mean()


device = xm.xla_device()
rng = np.random.default_rng(0)
counts = np.array([600, 150, 50])
y_np = np.repeat(np.arange(3), counts)
x_np = rng.normal(size=(len(y_np), 8)).astype(np.float32) + y_np[:, None] * 0.8
alpha = (1.0 / counts) / (1.0 / counts).sum()

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
criterion = FocalLoss(alpha).to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
X, Y = torch.from_numpy(x_np), torch.from_numpy(y_np)
for step in range(30):
    i = torch.randint(0, len(Y), (64,))
    loss = criterion(model(X[i].to(device)), Y[i].to(device))
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)

# temperature scaling on held-out logits (model frozen)
with torch.no_grad():
    val_logits = model(X[:256].to(device))
val_y = Y[:256].to(device)
log_t = torch.zeros(1, device=device, requires_grad=True)
t_opt = torch.optim.LBFGS([log_t], lr=0.1, max_iter=20)


def closure():
    t_opt.zero_grad()
    nll = F.cross_entropy(val_logits / log_t.exp(), val_y)
    nll.backward()
    return nll


t_opt.step(closure)
print("DTYPES", model[0].weight.dtype, criterion.alpha.dtype, loss.dtype, log_t.dtype)
print("temperature", log_t.exp().item())
