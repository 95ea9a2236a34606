"""DQN on a 1-D corridor, NumPy replay buffer, target network soft-updated by hand."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Corridor:
    """Walk left/right on a line of N cells; reward 1 at the right end."""

    def __init__(self, n=8, seed=0):
        self.n = n
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.pos = int(self.rng.integers(0, self.n // 2))
        self.t = 0
        return self._obs()

    def _obs(self):
        o = np.zeros(self.n + 1, dtype=np.float32)
        o[self.pos] = 1.0
        o[-1] = self.t / 20.0
        return o

    def step(self, a):
        self.pos = max(0, min(self.n - 1, self.pos + (1 if a == 1 else -1)))
        self.t += 1
        done = self.pos == self.n - 1 or self.t >= 20
        r = 1.0 if self.pos == self.n - 1 else -0.01
        return self._obs(), r, done


class Replay:
    def __init__(self, cap, obs_dim):
        self.obs = np.zeros((cap, obs_dim), dtype=np.float32)
        self.nxt = np.zeros((cap, obs_dim), dtype=np.float32)
        self.act = np.zeros(cap, dtype=np.int64)
        self.rew = np.zeros(cap, dtype=np.float32)
        self.done = np.zeros(cap, dtype=np.float32)
        self.cap, self.i, self.full = cap, 0, False

    def add(self, o, a, r, n, d):
        self.obs[self.i], self.act[self.i], self.rew[self.i], self.nxt[self.i], self.done[self.i] = o, a, r, n, d
        self.i = (self.i + 1) % self.cap
        self.full = self.full or self.i == 0

    def sample(self, b, rng):
        idx = rng.integers(0, self.cap if self.full else self.i, size=b)
        return self.obs[idx], self.act[idx], self.rew[idx], self.nxt[idx], self.done[idx]


class QNet(nn.Module):
    def __init__(self, obs_dim, n_act, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_act))

    def forward(self, x):
        return self.net(x)


def soft_update(target, source, tau):
    with torch.no_grad():
        for tp, p in zip(target.parameters(), source.parameters()):
            tp.data.mul_(1 - tau).add_(tau * p.data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tau", type=float, default=0.01)
    ap.add_argument("--gamma", type=float, default=0.97)
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "200")))
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    env = Corridor()
    obs_dim = env.n + 1
    q = QNet(obs_dim, 2).to(dev)
    q_target = QNet(obs_dim, 2).to(dev)
    q_target.load_state_dict(q.state_dict())
    q_target.eval()
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    buf = Replay(512, obs_dim)

    o = env.reset()
    for _ in range(64):  # warm-up with random actions
        a = int(rng.integers(0, 2))
        n, r, d = env.step(a)
        buf.add(o, a, r, n, d)
        o = env.reset() if d else n

    ep_ret, returns = 0.0, []
    for step in range(args.steps):
        eps = max(0.05, 1.0 - step / 100)
        if rng.random() < eps:
            a = int(rng.integers(0, 2))
        else:
            with torch.no_grad():
                a = q(torch.as_tensor(o, device=dev).unsqueeze(0)).argmax(dim=1).item()
        n, r, d = env.step(a)
        buf.add(o, a, r, n, d)
        ep_ret += r
        o = n
        if d:
            returns.append(ep_ret)
            ep_ret, o = 0.0, env.reset()

        ob, ac, rw, nx, dn = buf.sample(32, rng)
        ob, nx = torch.as_tensor(ob, device=dev), torch.as_tensor(nx, device=dev)
        ac = torch.as_tensor(ac, device=dev)
        rw, dn = torch.as_tensor(rw, device=dev), torch.as_tensor(dn, device=dev)
        with torch.no_grad():
            target = rw + args.gamma * (1 - dn) * q_target(nx).max(dim=1).values
        q_sa = q(ob).gather(1, ac.unsqueeze(1)).squeeze(1)
        loss = F.smooth_l1_loss(q_sa, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        soft_update(q_target, q, args.tau)
        xm.mark_step()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.5f} eps {eps:.2f} episodes {len(returns)}")

    tw = next(q_target.parameters())
    print("DTYPES q", next(q.parameters()).dtype, "q_target", tw.dtype, "target", target.dtype, "q_sa", q_sa.dtype)
    np.savez(os.path.join(os.environ.get("OUT_DIR", "/tmp"), "dqn_qtable.npz"),
             **{k: v.cpu().numpy() for k, v in q.state_dict().items()})
    print("mean return", float(np.mean(returns)) if returns else 0.0)


if __name__ == "__main__":
    main()
