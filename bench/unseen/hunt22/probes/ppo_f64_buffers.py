"""PPO (clipped surrogate) on a tiny corridor environment; rollouts stored in preallocated numpy arrays."""
import argparse, os
os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical
import torch_xla
import torch_xla.core.xla_model as xm

OBS, ACT = 8, 3


class Corridor:
    """Walk left/stay/right on a line of OBS cells; reward for reaching the right end."""

    def __init__(self, rng):
        self.rng = rng
        self.pos = 0

    def reset(self):
        self.pos = int(self.rng.integers(0, OBS // 2))
        return self._obs()

    def _obs(self):
        o = np.zeros(OBS, dtype=np.float32)
        o[self.pos] = 1.0
        return o

    def step(self, a):
        self.pos = int(np.clip(self.pos + (a - 1), 0, OBS - 1))
        done = self.pos == OBS - 1
        return self._obs(), (1.0 if done else -0.01), done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.pi = nn.Linear(64, ACT)
        self.v = nn.Linear(64, 1)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def compute_gae(rew, val, done, last_v, gamma=0.99, lam=0.95):
    adv = np.zeros_like(rew)
    gae = 0.0
    for t in reversed(range(len(rew))):
        nxt = last_v if t == len(rew) - 1 else val[t + 1]
        delta = rew[t] + gamma * nxt * (1 - done[t]) - val[t]
        gae = delta + gamma * lam * (1 - done[t]) * gae
        adv[t] = gae
    return adv, adv + val


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=20)
    ap.add_argument("--horizon", type=int, default=128)
    ap.add_argument("--clip", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = torch_xla.device()
    net = ActorCritic().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3, eps=1e-5)
    env = Corridor(rng)
    H = args.horizon
    obs_buf = np.zeros((H, OBS), dtype=np.float32)
    act_buf = np.zeros(H, dtype=np.int64)
    logp_buf = np.zeros(H)
    val_buf = np.zeros(H)
    rew_buf = np.zeros(H)
    done_buf = np.zeros(H)
    o = env.reset()
    for update in range(args.updates):
        ep_returns, ep_ret = [], 0.0
        with torch.no_grad():
            for t in range(H):
                logits, v = net(torch.as_tensor(o, device=device).unsqueeze(0))
                dist = Categorical(logits=logits)
                a = dist.sample()
                obs_buf[t] = o
                act_buf[t] = a.item()
                logp_buf[t] = dist.log_prob(a).item()
                val_buf[t] = v.item()
                o, r, d = env.step(int(a))
                rew_buf[t], done_buf[t] = r, float(d)
                ep_ret += r
                if d:
                    ep_returns.append(ep_ret)
                    ep_ret = 0.0
                    o = env.reset()
            _, last_v = net(torch.from_numpy(o).to(device).unsqueeze(0))
        adv, ret = compute_gae(rew_buf, val_buf, done_buf, last_v.cpu().numpy()[0])
        b_obs = torch.from_numpy(obs_buf).to(device)
        b_act = torch.from_numpy(act_buf).to(device)
        b_logp = torch.from_numpy(logp_buf).to(device)
        b_adv = torch.from_numpy(adv).to(device)
        b_ret = torch.from_numpy(ret).to(device)
        b_adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
        for epoch in range(4):
            for idx in torch.randperm(H, device=device).split(32):
                logits, v = net(b_obs[idx])
                dist = Categorical(logits=logits)
                logp = dist.log_prob(b_act[idx])
                ratio = torch.exp(logp - b_logp[idx])
                s1 = ratio * b_adv[idx]
                s2 = torch.clamp(ratio, 1 - args.clip, 1 + args.clip) * b_adv[idx]
                pg_loss = -torch.min(s1, s2).mean()
                v_loss = 0.5 * (b_ret[idx] - v).pow(2).mean()
                ent = dist.entropy().mean()
                loss = pg_loss + 0.5 * v_loss - 0.01 * ent
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), 0.5)
                opt.step()
                xm.mark_step()
        approx_kl = (b_logp[idx] - logp).mean().item()
        clipfrac = ((ratio - 1).abs() > args.clip).float().mean().item()
        mean_ret = float(np.mean(ep_returns)) if ep_returns else float("nan")
        print(f"update {update} ret {mean_ret:.3f} kl {approx_kl:.4f} clipfrac {clipfrac:.2f} v {v_loss.item():.4f}")
    torch.save({k: v.cpu() for k, v in net.state_dict().items()}, "ppo.pt")


if __name__ == "__main__":
    main()
