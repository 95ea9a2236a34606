"""DQN with a soft-updated target network; settings (and the process environment) come from dqn.yaml."""
import copy
import os
import sys

import numpy as np
import yaml

CFG = yaml.safe_load(open(sys.argv[1] if len(sys.argv) > 1 else "dqn.yaml"))
os.environ.update({k: str(v) for k, v in CFG["env"].items()})

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

N_POS, OBS, N_ACT = 12, 4, 3


class Corridor:
    """Walk to the right end; observation = (pos, pos^2, sin, noise) in float64."""

    def __init__(self, rng):
        self.rng, self.pos = rng, 0

    def obs(self):
        p = self.pos / N_POS
        return np.array([p, p * p, np.sin(3 * p), self.rng.normal(0, 0.05)])

    def reset(self):
        self.pos = int(self.rng.integers(0, 3))
        return self.obs()

    def step(self, a):
        self.pos = int(np.clip(self.pos + (a - 1), 0, N_POS))
        done = self.pos == N_POS
        return self.obs(), (1.0 if done else -0.01), done


class Replay:
    def __init__(self, cap):
        self.o = np.zeros((cap, OBS)); self.o2 = np.zeros((cap, OBS))
        self.a = np.zeros(cap, np.int64); self.r = np.zeros(cap); self.d = np.zeros(cap)
        self.cap, self.n, self.i = cap, 0, 0

    def add(self, o, a, r, o2, d):
        self.o[self.i], self.a[self.i], self.r[self.i], self.o2[self.i], self.d[self.i] = o, a, r, o2, d
        self.i = (self.i + 1) % self.cap; self.n = min(self.n + 1, self.cap)

    def sample(self, rng, b):
        j = rng.integers(0, self.n, b)
        return self.o[j], self.a[j], self.r[j], self.o2[j], self.d[j]


def main():
    t = CFG["train"]
    device = xm.xla_device()
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    online = nn.Sequential(nn.Linear(OBS, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, N_ACT)).to(device)
    target = copy.deepcopy(online).requires_grad_(False)
    opt = torch.optim.Adam(online.parameters(), lr=t["lr"])
    env, buf = Corridor(rng), Replay(t["buffer"])
    o, ep_ret, returns, q_log = env.reset(), 0.0, [], []
    for step in range(t["steps"]):
        eps = max(0.05, 1.0 - step / t["eps_decay"])
        if rng.random() < eps:
            a = int(rng.integers(0, N_ACT))
        else:
            with torch.no_grad():
                a = online(torch.from_numpy(o).float().to(device)[None]).argmax().item()
        o2, r, d = env.step(a)
        buf.add(o, a, r, o2, float(d)); ep_ret += r
        o = env.reset() if d else o2
        if d:
            returns.append(ep_ret); ep_ret = 0.0
        if buf.n < t["batch"]:
            continue
        ob, ab, rb, ob2, db = buf.sample(rng, t["batch"])
        ob = torch.from_numpy(ob).float().to(device); ob2 = torch.from_numpy(ob2).float().to(device)
        ab, rb, db = torch.from_numpy(ab).to(device), torch.from_numpy(rb).to(device), torch.from_numpy(db).to(device)
        q = online(ob).gather(1, ab[:, None]).squeeze(1)
        with torch.no_grad():
            y = rb + t["gamma"] * (1 - db) * target(ob2).max(1).values
        loss = F.smooth_l1_loss(q, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(online.parameters(), 10.0)
        opt.step()
        with torch.no_grad():
            for tp, p in zip(target.parameters(), online.parameters()):
                tp.data.mul_(1 - t["tau"]).add_(t["tau"] * p.data)
        xm.mark_step()
        if step % 50 == 0:
            xm.add_step_closure(lambda s=step, l=loss, qm=q.mean().detach(): q_log.append((s, l.item(), qm.cpu().numpy())))
    print("episodes", len(returns), "mean return (last 5)", np.mean(returns[-5:]) if returns else None)
    print("q log", [(s, round(l, 4), float(qm)) for s, l, qm in q_log])
    with torch.no_grad():
        grid = torch.from_numpy(np.stack([Corridor(rng).obs() for _ in range(4)])).float().to(device)
        np.save("q_table.npy", online(grid).cpu().numpy())


if __name__ == "__main__":
    main()
