"""PPO (clip objective) on a NumPy point-reaching task, rollout storage on the XLA device."""
import os

os.environ |= {"PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "CPU"), "XLA_USE_BF16": "1"}

import json
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

OBS, ACT, N_ENVS, HORIZON = 4, 4, 8, 16


class Reach:
    """N point masses on a plane; the action moves one of four ways; reward is minus the distance."""

    def __init__(self, n, seed):
        self.rng = np.random.default_rng(seed)
        self.n = n
        self.reset()

    def reset(self):
        self.pos = self.rng.uniform(-1, 1, (self.n, 2))
        self.goal = self.rng.uniform(-1, 1, (self.n, 2))
        return self.obs()

    def obs(self):
        return np.concatenate([self.pos, self.goal - self.pos], axis=1)

    def step(self, a):
        moves = np.array([[0.1, 0], [-0.1, 0], [0, 0.1], [0, -0.1]])
        self.pos = self.pos + moves[a]
        d = np.linalg.norm(self.goal - self.pos, axis=1)
        done = d < 0.1
        self.pos[done] = self.rng.uniform(-1, 1, (done.sum(), 2))
        return self.obs(), -d, done.astype(np.float64)


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.pi = nn.Linear(64, ACT)
        self.v = nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return torch.distributions.Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)


def new_storage(device):
    z = lambda *s: torch.zeros(*s, device=device)
    return {"obs": z(HORIZON, N_ENVS, OBS), "act": torch.zeros(HORIZON, N_ENVS, dtype=torch.long, device=device),
            "logp": z(HORIZON, N_ENVS), "rew": z(HORIZON, N_ENVS), "done": z(HORIZON, N_ENVS), "val": z(HORIZON, N_ENVS)}


def gae(buf, last_val, gamma=0.99, lam=0.95):
    adv = torch.zeros_like(buf["rew"])
    last = torch.zeros(N_ENVS, device=buf["rew"].device)
    for t in reversed(range(HORIZON)):
        nxt = last_val if t == HORIZON - 1 else buf["val"][t + 1]
        nonterm = 1.0 - buf["done"][t]
        delta = buf["rew"][t] + gamma * nxt * nonterm - buf["val"][t]
        last = delta + gamma * lam * nonterm * last
        adv[t] = last
    return adv, adv + buf["val"]


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    env = Reach(N_ENVS, 0)
    ac = ActorCritic().to(device)
    opt = torch.optim.Adam(ac.parameters(), lr=3e-4, eps=1e-5)
    obs = torch.as_tensor(env.reset(), dtype=torch.float32, device=device)
    log = []
    for it in range(int(os.environ.get("ITERS", "4"))):
        buf = new_storage(device)
        with torch.no_grad():
            for t in range(HORIZON):
                dist, v = ac(obs)
                a = dist.sample()
                buf["obs"][t], buf["act"][t], buf["logp"][t], buf["val"][t] = obs, a, dist.log_prob(a), v
                o, r, d = env.step(a.cpu().numpy())
                buf["rew"][t] = torch.as_tensor(r, dtype=torch.float32, device=device)
                buf["done"][t] = torch.from_numpy(d).to(device)
                obs = torch.as_tensor(o, dtype=torch.float32, device=device)
            _, last_val = ac(obs)
            adv, ret = gae(buf, last_val)
        b_obs, b_act = buf["obs"].reshape(-1, OBS), buf["act"].reshape(-1)
        b_logp, b_adv, b_ret, b_val = buf["logp"].reshape(-1), adv.reshape(-1), ret.reshape(-1), buf["val"].reshape(-1)
        b_adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
        for epoch in range(3):
            dist, v = ac(b_obs)
            ratio = (dist.log_prob(b_act) - b_logp).exp()
            pg = -torch.min(ratio * b_adv, ratio.clamp(0.8, 1.2) * b_adv).mean()
            v_clip = b_val + (v - b_val).clamp(-0.2, 0.2)
            vf = 0.5 * torch.max((v - b_ret) ** 2, (v_clip - b_ret) ** 2).mean()
            loss = pg + 0.5 * vf - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(ac.parameters(), 0.5)
            opt.step()
            xm.mark_step()
        with torch.no_grad():
            approx_kl = ((ratio - 1) - ratio.log()).mean()
            clipfrac = ((ratio - 1.0).abs() > 0.2).float().mean()
        log.append({"iter": it, "loss": loss.item(), "kl": approx_kl.item(), "clipfrac": clipfrac.item(),
                    "ret": buf["rew"].sum(0).mean().item()})
        print(json.dumps(log[-1]))
    np.save("returns.npy", ret.cpu().numpy())


if __name__ == "__main__":
    main()
