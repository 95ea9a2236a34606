"""A2C with a Gaussian policy on a 2-D point-mass reach task simulated in NumPy (float64)."""
import argparse
import csv
import os

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Normal
import torch_xla
import torch_xla.core.xla_model as xm

OBS, ACT = 6, 2


class PointMass:
    """x'' = a - 0.1 x'; reward = -|x - goal| - 0.01 |a|^2. Vectorised over n envs."""

    def __init__(self, n, rng):
        self.n, self.rng, self.dt = n, rng, 0.1
        self.reset()

    def reset(self):
        self.pos = self.rng.uniform(-1, 1, (self.n, 2))
        self.vel = np.zeros((self.n, 2))
        self.goal = self.rng.uniform(-1, 1, (self.n, 2))
        return self.obs()

    def obs(self):
        return np.concatenate([self.pos, self.vel, self.goal - self.pos], axis=1)

    def step(self, a):
        a = np.clip(a, -1.0, 1.0)
        self.vel = np.clip(self.vel + self.dt * (a - 0.5 * self.vel), -1, 1)
        self.pos = np.clip(self.pos + self.dt * self.vel, -1.5, 1.5)
        dist = np.linalg.norm(self.goal - self.pos, axis=1)
        return self.obs(), -dist - 0.01 * (a ** 2).sum(1), dist < 0.05


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh())
        self.mu = nn.Linear(128, ACT)
        self.log_std = nn.Parameter(torch.full((ACT,), -0.5))
        self.v = nn.Linear(128, 1)

    def forward(self, obs):
        h = self.body(obs)
        return Normal(self.mu(h), self.log_std.exp().expand(h.shape[0], ACT)), self.v(h).squeeze(-1)


def squashed_log_prob(dist, raw):
    a = torch.tanh(raw)
    return (dist.log_prob(raw) - torch.log(1 - a.pow(2) + 1e-6)).sum(-1), a


def discounted(rewards, dones, last_v, gamma):
    out = np.zeros_like(rewards)
    run = last_v
    for t in reversed(range(len(rewards))):
        run = rewards[t] + gamma * run * (1.0 - dones[t])
        out[t] = run
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--updates", type=int, default=200)
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--horizon", type=int, default=32)
    ap.add_argument("--gamma", type=float, default=0.97)
    ap.add_argument("--out", default="runs/a2c")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = torch_xla.device()

    env = PointMass(args.envs, rng)
    net = ActorCritic().to(device)
    opt = torch.optim.RMSprop(net.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)
    obs = env.reset()
    log = open(os.path.join(args.out, "progress.csv"), "w", newline="")
    writer = csv.writer(log)
    writer.writerow(["update", "return", "entropy", "v_loss", "std"])

    for update in range(args.updates):
        raws, rewards, dones, observations = [], [], [], []
        with torch.no_grad():
            for _ in range(args.horizon):
                o = torch.from_numpy(obs).float().to(device)
                dist, _ = net(o)
                raw = dist.sample()
                observations.append(o)
                raws.append(raw)
                obs, r, d = env.step(torch.tanh(raw).cpu().numpy())
                rewards.append(r)
                dones.append(d.astype(np.float64))
                if d.any():
                    obs = env.reset()
            _, last_v = net(torch.from_numpy(obs).float().to(device))
        returns = discounted(np.stack(rewards), np.stack(dones), last_v.cpu().numpy().astype(np.float64), args.gamma)
        ret = torch.as_tensor(returns.reshape(-1), device=device)

        dist, v = net(torch.cat(observations))
        logp, _ = squashed_log_prob(dist, torch.cat(raws))
        adv = (ret - v).detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg_loss = -(logp * adv).mean()
        v_loss = 0.5 * (ret - v).pow(2).mean()
        entropy = dist.entropy().sum(-1).mean()
        loss = pg_loss + 0.5 * v_loss - 1e-3 * entropy
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 0.5)
        opt.step()
        torch_xla.sync()

        if update % 20 == 0 or update == args.updates - 1:
            row = [update, float(np.mean(rewards)), entropy.item(), v_loss.item(), net.log_std.exp().mean().item()]
            writer.writerow(row)
            xm.master_print("upd %d ret %.3f ent %.3f vl %.3f std %.3f" % tuple(row))
    log.close()
    xm.save({"net": net.state_dict(), "obs_rms": None}, os.path.join(args.out, "a2c.pt"))


if __name__ == "__main__":
    main()
