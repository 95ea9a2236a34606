"""REINFORCE on a toy corridor environment written in NumPy."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Corridor:
    def __init__(self, n=6, seed=0):
        self.n = n
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.pos = 0
        return self._obs()

    def _obs(self):
        obs = np.zeros(self.n + 2)
        obs[self.pos] = 1.0
        obs[-1] = self.rng.normal()
        return obs

    def step(self, action):
        self.pos = max(0, min(self.n - 1, self.pos + (1 if action == 1 else -1)))
        done = self.pos == self.n - 1
        return self._obs(), (1.0 if done else -0.1), done


class Policy(nn.Module):
    def __init__(self, obs_dim, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, obs):
        return self.body(obs)


def discounted(rewards, gamma=0.95):
    out, running = [], 0.0
    for r in reversed(rewards):
        running = r + gamma * running
        out.append(running)
    returns = np.array(out[::-1])
    return (returns - returns.mean()) / (returns.std() + 1e-6)


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    env = Corridor()
    policy = Policy(env.n + 2).to(device)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    for episode in range(int(os.environ.get("EPISODES", "12"))):
        obs = env.reset()
        log_probs, rewards = [], []
        for _ in range(10):
            x = torch.from_numpy(obs).float().to(device)
            dist = torch.distributions.Categorical(logits=policy(x))
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            obs, reward, done = env.step(int(action.item()))
            rewards.append(reward)
            if done:
                break
        returns = torch.tensor(discounted(rewards), device=device)
        loss = -(torch.stack(log_probs) * returns).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"episode {episode} loss {loss.item():.4f} return {sum(rewards):.2f}")


if __name__ == "__main__":
    main()
