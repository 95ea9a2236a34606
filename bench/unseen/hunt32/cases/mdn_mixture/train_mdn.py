"""Mixture density network for a multi-modal inverse problem (x = y + 0.3 sin(2 pi y) + noise, predict y from x)."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np
import torch
import torch.distributions as D
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

K = 5
STEPS = 40


class MDN(nn.Module):
    def __init__(self, hidden=48, k=K):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, k)
        self.mu = nn.Linear(hidden, k)
        self.log_sigma = nn.Linear(hidden, k)

    def forward(self, x):
        h = self.body(x)
        sigma = F.softplus(self.log_sigma(h)) + 1e-3
        return self.pi(h), self.mu(h), sigma


def mixture(logits, mu, sigma):
    return D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(mu, sigma))


rng = np.random.default_rng(1)
y = rng.uniform(0.0, 1.0, size=(2048, 1))
x = y + 0.3 * np.sin(2 * np.pi * y) + rng.normal(0, 0.05, size=y.shape)  # float64

device = xm.xla_device()
model = MDN().to(device)
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
xt = torch.tensor(x, device=device)
yt = torch.tensor(y, device=device)

for step in range(STEPS):
    idx = torch.randint(0, len(x), (128,), device=device)
    logits, mu, sigma = model(xt[idx])
    nll = -mixture(logits, mu, sigma).log_prob(yt[idx].squeeze(-1)).mean()
    opt.zero_grad()
    nll.backward()
    xm.optimizer_step(opt, barrier=True)
    if step % 10 == 0:
        print(f"step {step} nll {nll.item():.3f}")

model.eval()
with torch.no_grad():
    grid = torch.linspace(-0.2, 1.2, 50, device=device).unsqueeze(-1)
    logits, mu, sigma = model(grid)
    dist = mixture(logits, mu, sigma)
    draws = dist.sample((200,))  # (200, 50)
    mean = dist.mean
    weights = F.softmax(logits, dim=-1)
    print("DTYPES", model.mu.weight.dtype, xt.dtype, draws.dtype, mean.dtype)
    hist, edges = np.histogram(draws.cpu().numpy().ravel(), bins=20, range=(-0.5, 1.5))
    np.savez("mdn_eval.npz", grid=grid.cpu().numpy(), mean=mean.cpu().numpy(), weights=weights.cpu().numpy(), hist=hist)
    print("mode weight", weights.max(-1).values.mean().item())
