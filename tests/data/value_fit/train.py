"""Fits a value function to discounted returns of random-walk episodes: observations come from NumPy
(float64), are normalised by a running mean kept on the device, and go to a small recurrent critic
whose hidden state dtype is a constructor argument read from a config string. The critic is
initialised orthogonally after it is moved to the device."""

import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla

CONFIG = {"state_dtype": "float32", "hidden": 16, "steps": 10}


class RunningMean:
    """Mean of every observation seen so far, kept on the device."""

    def __init__(self, size, device, eps=1e-2):
        self.mean = torch.zeros(size, device=device)
        self.count = torch.tensor(eps, device=device)

    def update(self, batch):
        total = self.count + batch.shape[0]
        self.mean = self.mean + (batch.mean(0) - self.mean) * (batch.shape[0] / total)
        self.count = total


class Critic(nn.Module):
    def __init__(self, features, hidden, state_dtype):
        super().__init__()
        self.state_dtype = state_dtype
        self.inp = nn.Linear(features, hidden)
        self.rec = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = torch.zeros(obs.shape[0], self.rec.in_features, dtype=self.state_dtype, device=obs.device)
        for t in range(obs.shape[1]):
            h = torch.tanh(self.inp(obs[:, t]) + self.rec(h))
        return self.out(h).squeeze(-1)


def orthogonal(module):
    if isinstance(module, nn.Linear):
        nn.init.orthogonal_(module.weight, gain=0.8)
        nn.init.zeros_(module.bias)


def episodes(rng, n=32, length=6, features=4):
    obs = rng.normal(size=(n, length, features)).cumsum(axis=1)
    rewards = obs[:, :, 0]
    returns = (rewards * 0.9 ** np.arange(length)).sum(axis=1)
    return obs, returns


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    critic = Critic(4, CONFIG["hidden"], getattr(torch, CONFIG["state_dtype"])).to(device)
    critic.apply(orthogonal)
    optimizer = torch.optim.Adam(critic.parameters(), lr=3e-3)
    norm = RunningMean(4, device)
    for step in range(CONFIG["steps"]):
        obs_np, returns_np = episodes(rng)
        obs = torch.as_tensor(obs_np, device=device)
        norm.update(obs.reshape(-1, 4))
        values = critic((obs - norm.mean).float())
        target = torch.as_tensor(returns_np, device=device)
        loss = nn.functional.mse_loss(values, target.to(values.dtype)) / 100.0
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")
    print("dtypes", critic.inp.weight.dtype, norm.count.dtype, values.dtype)


if __name__ == "__main__":
    main()
