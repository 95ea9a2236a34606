"""REINFORCE on a toy 1-D reaching task: a Gaussian policy (torch.distributions.Normal, learned log-std),
episodes simulated on the host in NumPy, discounted returns computed in NumPy float64 and sent to the device as
they are, a value baseline. Legacy bf16 switch on."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.distributions import Normal

HORIZON, EPISODES, OBS = 8, 6, 3
GAMMA = 0.95
STEPS = 10


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        self.mu = nn.Linear(32, 1)
        self.value = nn.Linear(32, 1)
        self.log_std = nn.Parameter(torch.full((1,), -0.5))

    def forward(self, obs):
        h = self.body(obs)
        return Normal(self.mu(h), self.log_std.exp()), self.value(h).squeeze(-1)


def observe(pos, goal, t):
    return np.stack([pos, goal - pos, np.full_like(pos, t / HORIZON)], axis=-1).astype(np.float32)


def rollout(policy, device, rng):
    pos = rng.uniform(-1, 1, EPISODES)
    goal = rng.uniform(-1, 1, EPISODES)
    obs_all, act_all, rew_all = [], [], []
    with torch.no_grad():
        for t in range(HORIZON):
            obs = observe(pos, goal, t)
            dist, _ = policy(torch.from_numpy(obs).to(device))
            act = dist.sample().cpu().numpy()[:, 0]
            pos = pos + 0.3 * np.clip(act, -1, 1)
            obs_all.append(obs)
            act_all.append(act)
            rew_all.append(-np.abs(goal - pos))
    rew = np.stack(rew_all, 1)
    ret = np.zeros_like(rew)
    run = np.zeros(EPISODES)
    for t in reversed(range(HORIZON)):
        run = rew[:, t] + GAMMA * run
        ret[:, t] = run
    obs = np.stack(obs_all, 1).reshape(-1, OBS)
    act = np.stack(act_all, 1).reshape(-1, 1).astype(np.float32)
    return torch.from_numpy(obs), torch.from_numpy(act), torch.from_numpy(ret.reshape(-1)), rew.sum(1).mean()


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    rng = np.random.default_rng(7)
    policy = Policy().to(device)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    history = []
    for step in range(STEPS):
        obs, act, ret, mean_reward = rollout(policy, device, rng)
        obs, act, ret = obs.to(device), act.to(device), ret.to(device)
        dist, value = policy(obs)
        adv = ret - value.detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-6)
        logp = dist.log_prob(act).squeeze(-1)
        loss = -(logp * adv).mean() + 0.5 * ((value - ret) ** 2).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        history.append((float(mean_reward), loss.item(), policy.log_std.item()))
        print(f"step {step} loss {history[-1][1]:.4f} reward {mean_reward:.3f} log_std {history[-1][2]:.3f}")
    stats = torch.stack([policy.mu.weight.detach().flatten(), policy.value.weight.detach().flatten()])
    np.save("pg_heads.npy", stats.cpu().numpy())


if __name__ == "__main__":
    main()
