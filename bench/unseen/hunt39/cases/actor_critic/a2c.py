"""Advantage actor-critic on a tiny NumPy point-mass environment: separate
actor and critic optimizers, TD targets built from the detached critic."""
import argparse
import os

ap = argparse.ArgumentParser()
ap.add_argument("--bf16", action="store_true", default=True)
ap.add_argument("--updates", type=int, default=int(os.environ.get("STEPS", "30")))
args = ap.parse_args()
os.environ["XLA_USE_BF16"] = str(int(args.bf16))

import numpy as np
import torch
import torch.nn as nn
import torch_xla

dev = torch_xla.device()
torch.manual_seed(41)
GAMMA = 0.97
N_ENVS = 16


class PointMass:
    """Vectorised 2-D point mass; reward is minus the distance to the origin."""

    def __init__(self, n, seed=0):
        self.rng = np.random.default_rng(seed)
        self.pos = self.rng.normal(size=(n, 2))
        self.vel = np.zeros((n, 2))

    def obs(self):
        return np.concatenate([self.pos, self.vel], axis=1)

    def step(self, action):
        self.vel = 0.9 * self.vel + 0.1 * (action - 1.0)
        self.pos = self.pos + 0.1 * self.vel
        dist = np.linalg.norm(self.pos, axis=1)
        done = dist > 4.0
        self.pos[done] = self.rng.normal(size=(done.sum(), 2))
        self.vel[done] = 0.0
        return self.obs(), -dist, done


actor = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2 * 3)).to(dev)
critic = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 1)).to(dev)
opt_a = torch.optim.Adam(actor.parameters(), lr=7e-4)
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3)
env = PointMass(N_ENVS, seed=41)
obs = torch.as_tensor(env.obs(), dtype=torch.float32, device=dev)

for upd in range(args.updates):
    logits = actor(obs).view(N_ENVS, 2, 3)
    dist = torch.distributions.Categorical(logits=logits)
    act = dist.sample()
    next_obs_np, reward_np, done_np = env.step(act.cpu().numpy())
    next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32, device=dev)
    reward = torch.tensor(reward_np, device=dev)
    not_done = torch.from_numpy(1.0 - done_np.astype(np.float64)).to(dev)

    value = critic(obs).squeeze(-1)
    with torch.no_grad():
        td_target = reward + GAMMA * critic(next_obs).squeeze(-1) * not_done
    advantage = (td_target - value).detach()

    critic_loss = (td_target - value).pow(2).mean()
    opt_c.zero_grad()
    critic_loss.backward()
    opt_c.step()

    actor_loss = -(dist.log_prob(act).sum(-1) * advantage).mean() - 0.01 * dist.entropy().mean()
    opt_a.zero_grad()
    actor_loss.backward()
    opt_a.step()
    torch_xla.sync()
    obs = next_obs
    print(f"upd {upd} actor {actor_loss.item():.5f} critic {critic_loss.item():.5f} ret {reward.mean().item():.4f}")

print("DTYPES", actor[0].weight.dtype, reward.dtype, td_target.dtype, not_done.dtype)
