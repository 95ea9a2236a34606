"""A PPO update loop on a contextual bandit simulated in NumPy (float64 states and
rewards), with CleanRL-style orthogonal initialisation applied after the move."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical
import torch_xla
import torch_xla.core.xla_model as xm

OBS, ACTS, ENVS = 6, 4, 64


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.orthogonal_(m.weight, gain=np.sqrt(2))
        nn.init.constant_(m.bias, 0.0)


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        self.pi = nn.Linear(32, ACTS)
        self.v = nn.Linear(32, 1)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.pi(h), self.v(h).squeeze(-1)


rng = np.random.default_rng(0)
torch.manual_seed(0)
device = torch_xla.device()
agent = Agent().to(device)
agent.apply(init_weights)
opt = torch.optim.Adam(agent.parameters(), lr=2.5e-4 * 10, eps=1e-5)
w_true = rng.normal(size=(OBS, ACTS))

for it in range(10):
    obs_np = rng.normal(size=(ENVS, OBS))
    obs = torch.as_tensor(obs_np, device=device)
    with torch.no_grad():
        logits, value = agent(obs.float())
        dist = Categorical(logits=logits)
        action = dist.sample()
        old_logp = dist.log_prob(action)
    act_np = action.cpu().numpy()
    reward_np = (obs_np @ w_true)[np.arange(ENVS), act_np] + 0.1 * rng.normal(size=ENVS)
    rewards = torch.as_tensor(reward_np, device=device)
    adv = rewards - value
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)

    logits, new_value = agent(obs.float())
    dist = Categorical(logits=logits)
    ratio = (dist.log_prob(action) - old_logp).exp()
    pg_loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    v_loss = 0.5 * (new_value - rewards).pow(2).mean()
    loss = pg_loss + 0.5 * v_loss - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
    opt.step()
    xm.mark_step()
    print(f"step {it} loss {loss.item():.4f} mean reward {reward_np.mean():.3f}")

print("DTYPES obs", obs.dtype, "rewards", rewards.dtype, "adv", adv.dtype, "w", agent.pi.weight.dtype)
values = new_value.detach().cpu().numpy()
ev = 1.0 - np.var(reward_np - values) / np.var(reward_np)
print(f"explained variance {ev:.3f}")
