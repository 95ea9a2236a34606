"""Advantage actor-critic on a toy contextual walk simulated on the device.

Actor and critic are separate networks with separate optimizers; returns and
advantages come from GAE over a short rollout.
"""
import json
import os

os.environ.update({"XLA_USE_BF16": "1", "XLA_IR_DEBUG": "0"})

import torch
import torch.nn as nn
from torch.distributions import Categorical
import torch_xla.core.xla_model as xm

OBS, ACTIONS, T, ENVS = 6, 4, 8, 16
GAMMA, LAM = 0.97, 0.9


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, ACTIONS))

    def forward(self, obs):
        return Categorical(logits=self.body(obs))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, obs):
        return self.body(obs).squeeze(-1)


def env_step(obs, action, goal):
    """Reward 1 when the action matches the goal of the context, plus a little noise."""
    reward = (action == goal).float() + 0.1 * torch.randn(obs.shape[0], device=obs.device)
    next_obs = obs.roll(1, dims=1) + 0.05 * torch.randn_like(obs)
    return next_obs, reward


def gae(rewards, values, last_value):
    adv = torch.zeros(T, ENVS, device=rewards.device)
    running = torch.zeros(ENVS, device=rewards.device)
    for t in reversed(range(T)):
        nxt = last_value if t == T - 1 else values[t + 1]
        delta = rewards[t] + GAMMA * nxt - values[t]
        running = delta + GAMMA * LAM * running
        adv[t] = running
    return adv, adv + values


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    actor, critic = Actor().to(device), Critic().to(device)
    opt_a = torch.optim.Adam(actor.parameters(), lr=3e-3)
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-2)

    obs = torch.randn(ENVS, OBS, device=device)
    history = []
    for update in range(12):
        goal = obs[:, :ACTIONS].argmax(-1)
        obs_buf, act_buf, rew_buf, logp_buf = [], [], [], []
        with torch.no_grad():
            for t in range(T):
                dist = actor(obs)
                action = dist.sample()
                nxt, reward = env_step(obs, action, goal)
                obs_buf.append(obs); act_buf.append(action); rew_buf.append(reward)
                logp_buf.append(dist.log_prob(action))
                obs = nxt
            values = critic(torch.stack(obs_buf))
            adv, returns = gae(torch.stack(rew_buf), values, critic(obs))
            adv = (adv - adv.mean()) / (adv.std() + 1e-6)

        obs_t, act_t = torch.stack(obs_buf), torch.stack(act_buf)
        dist = actor(obs_t)
        entropy = dist.entropy().mean()
        actor_loss = -(dist.log_prob(act_t) * adv).mean() - 0.01 * entropy
        opt_a.zero_grad()
        actor_loss.backward()
        xm.optimizer_step(opt_a)

        critic_loss = 0.5 * (critic(obs_t) - returns).pow(2).mean()
        opt_c.zero_grad()
        critic_loss.backward()
        xm.optimizer_step(opt_c)
        xm.mark_step()

        mean_reward = torch.stack(rew_buf).mean()
        history.append({"update": update, "reward": float(mean_reward),
                        "actor": actor_loss.item(), "critic": critic_loss.item()})
        print(f"update {update} reward {mean_reward:.3f} actor {actor_loss.item():.4f} "
              f"critic {critic_loss.item():.4f} entropy {entropy.item():.3f}", flush=True)

    probs = actor(obs).probs.mean(0)
    with open(os.environ.get("A2C_OUT", "/tmp/a2c_history.json"), "w") as fh:
        json.dump({"history": history, "final_policy": probs.cpu().tolist()}, fh)


if __name__ == "__main__":
    main()
