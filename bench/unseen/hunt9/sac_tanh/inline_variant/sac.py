"""Soft actor-critic on a 2-D point-mass task simulated in NumPy.

The policy is a tanh-squashed Gaussian (reparameterised with rsample), two Q
networks with target copies updated by Polyak averaging, and a learned
temperature (log_alpha) with its own optimizer.
"""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Normal
import torch_xla.core.xla_model as xm

OBS, ACT = 4, 2
GAMMA, TAU = 0.98, 0.05
WARMUP, UPDATES, BATCH = 64, 12, 32


class PointMass:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.reset()

    def reset(self):
        self.pos = self.rng.uniform(-1, 1, 2).astype(np.float32)
        self.vel = np.zeros(2, np.float32)
        return self.obs()

    def obs(self):
        return np.concatenate([self.pos, self.vel]).astype(np.float32)

    def step(self, action):
        self.vel = 0.9 * self.vel + 0.1 * np.clip(action, -1, 1)
        self.pos = np.clip(self.pos + 0.1 * self.vel, -2, 2)
        reward = -float(np.linalg.norm(self.pos))
        return self.obs(), reward, reward > -0.05


class Replay:
    def __init__(self, size):
        self.obs = np.zeros((size, OBS), np.float32)
        self.act = np.zeros((size, ACT), np.float32)
        self.rew = np.zeros(size, np.float32)
        self.nxt = np.zeros((size, OBS), np.float32)
        self.done = np.zeros(size, np.float32)
        self.n, self.size = 0, size

    def add(self, o, a, r, o2, d):
        i = self.n % self.size
        self.obs[i], self.act[i], self.rew[i], self.nxt[i], self.done[i] = o, a, r, o2, d
        self.n += 1

    def sample(self, rng, device):
        idx = rng.integers(0, min(self.n, self.size), BATCH)
        return [torch.as_tensor(a[idx], device=device) for a in (self.obs, self.act, self.rew, self.nxt, self.done)]


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 64), nn.ReLU(), nn.Linear(64, 2 * ACT))

    def forward(self, obs):
        mu, log_std = self.body(obs).chunk(2, dim=-1)
        dist = Normal(mu, log_std.clamp(-5, 2).exp())
        u = dist.rsample()
        a = torch.tanh(u)
        logp = dist.log_prob(u).sum(-1) - torch.log(1 - a.pow(2) + 1e-6).sum(-1)
        return a, logp


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS + ACT, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, obs, act):
        return self.body(torch.cat([obs, act], dim=-1)).squeeze(-1)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    actor, q1, q2 = Actor().to(device), QNet().to(device), QNet().to(device)
    q1_targ, q2_targ = QNet().to(device), QNet().to(device)
    q1_targ.load_state_dict(q1.state_dict())
    q2_targ.load_state_dict(q2.state_dict())
    log_alpha = torch.zeros(1, device=device, requires_grad=True)
    pi_opt = torch.optim.Adam(actor.parameters(), lr=3e-4)
    q_opt = torch.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=3e-4)
    a_opt = torch.optim.Adam([log_alpha], lr=3e-3)
    target_entropy = -float(ACT)

    env, buf = PointMass(0), Replay(1024)
    o = env.reset()
    for t in range(WARMUP + UPDATES):
        with torch.no_grad():
            a, _ = actor(torch.as_tensor(o, device=device).unsqueeze(0))
        a = a.squeeze(0).cpu().numpy()
        o2, r, d = env.step(a)
        buf.add(o, a, r, o2, float(d))
        o = env.reset() if d else o2
        if t < WARMUP:
            continue

        obs, act, rew, nxt, done = buf.sample(rng, device)
        alpha = log_alpha.exp().detach()
        with torch.no_grad():
            a2, logp2 = actor(nxt)
            q_next = torch.min(q1_targ(nxt, a2), q2_targ(nxt, a2)) - alpha * logp2
            backup = rew + GAMMA * (1 - done) * q_next
        q_loss = ((q1(obs, act) - backup) ** 2).mean() + ((q2(obs, act) - backup) ** 2).mean()
        q_opt.zero_grad()
        q_loss.backward()
        q_opt.step()

        a_new, logp = actor(obs)
        pi_loss = (alpha * logp - torch.min(q1(obs, a_new), q2(obs, a_new))).mean()
        pi_opt.zero_grad()
        pi_loss.backward()
        pi_opt.step()

        a_loss = -(log_alpha * (logp.detach() + target_entropy)).mean()
        a_opt.zero_grad()
        a_loss.backward()
        a_opt.step()

        with torch.no_grad():
            for net, targ in ((q1, q1_targ), (q2, q2_targ)):
                for p, tp in zip(net.parameters(), targ.parameters()):
                    tp.mul_(1 - TAU).add_(p, alpha=TAU)
        xm.mark_step()
        print(f"update {t - WARMUP + 1} q {q_loss.item():.4f} pi {pi_loss.item():.4f} "
              f"alpha {log_alpha.exp().item():.4f}")


if __name__ == "__main__":
    main()
