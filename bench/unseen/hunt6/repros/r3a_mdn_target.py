"""Repro: mdn_normal reduced (training only, loss body simplified): the target `y` handed to the
helper mdn_nll(*model(x), y) is not cast, so the loss computes in f32 where the legacy run had bf16."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Normal
import torch_xla
import torch_xla.core.xla_model as xm


def inverse_sine(n, rng):
    y = rng.uniform(0.0, 1.0, size=(n, 1))
    x = y + 0.3 * np.sin(2 * np.pi * y) + rng.uniform(-0.1, 0.1, size=(n, 1))
    return x, y


class MDN(nn.Module):
    def __init__(self, hidden=48, k=5):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, k)
        self.mu = nn.Linear(hidden, k)
        self.log_sigma = nn.Linear(hidden, k)

    def forward(self, x):
        h = self.body(x)
        sigma = torch.clamp(F.softplus(self.log_sigma(h)), min=1e-3)
        return self.pi(h), self.mu(h), sigma


def mdn_nll(pi_logits, mu, sigma, y):
    return (pi_logits - y).pow(2).mean()


def sample(model, x):
    pi_logits, mu, sigma = model(x)
    k = Categorical(logits=pi_logits).sample().unsqueeze(-1)
    return Normal(mu.gather(-1, k), sigma.gather(-1, k)).sample()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    model = MDN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(12):
        xs, ys = inverse_sine(256, rng)
        x = torch.from_numpy(xs).float().to(device)
        y = torch.from_numpy(ys).float().to(device)
        loss = mdn_nll(*model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")



if __name__ == "__main__":
    main()
