"""Neural ODE fitted to a damped spiral, integrated with a hand-written fixed-step RK4."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class ODEFunc(nn.Module):
    def __init__(self, dim=2, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, dim))

    def forward(self, t, y):
        tt = t.expand(y.shape[0], 1)
        return self.net(torch.cat([y, tt], dim=-1))


def rk4(func, y0, ts):
    """Fixed-step RK4 over the time grid ts; returns the trajectory (T, B, D)."""
    ys = [y0]
    y = y0
    for i in range(ts.shape[0] - 1):
        t0, t1 = ts[i], ts[i + 1]
        h = t1 - t0
        k1 = func(t0, y)
        k2 = func(t0 + h / 2, y + h * k1 / 2)
        k3 = func(t0 + h / 2, y + h * k2 / 2)
        k4 = func(t1, y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        ys.append(y)
    return torch.stack(ys)


def spiral(n_traj, n_t, rng):
    t = np.linspace(0.0, 2.0, n_t)
    r0 = rng.uniform(0.5, 1.5, size=(n_traj, 1))
    ph = rng.uniform(0, 2 * math.pi, size=(n_traj, 1))
    r = r0 * np.exp(-0.4 * t)[None]
    xy = np.stack([r * np.cos(3 * t + ph), r * np.sin(3 * t + ph)], axis=-1)  # (B, T, 2)
    return t, xy.transpose(1, 0, 2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--n_t", type=int, default=12)
    p.add_argument("--lr", type=float, default=3e-3)
    args = p.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch_xla.device()
    func = ODEFunc().to(device)
    opt = torch.optim.Adam(func.parameters(), lr=args.lr)

    # running metrics kept on the device: [sum of loss, sum of endpoint error, count]
    running = torch.zeros(3).to(device)
    t_np, traj = spiral(32, args.n_t, rng)
    ts = torch.tensor(t_np, dtype=torch.float32, device=device)
    target = torch.from_numpy(traj).float().to(device)

    for step in range(args.steps):
        opt.zero_grad()
        pred = rk4(func, target[0], ts)
        loss = (pred - target).abs().mean()
        loss.backward()
        opt.step()
        torch_xla.sync()
        with torch.no_grad():
            end_err = (pred[-1] - target[-1]).norm(dim=-1).mean()
            running += torch.stack([loss.detach(), end_err, torch.ones((), device=device)])
        print(f"step {step} loss {loss.item():.5f}")

    avg = running[:2] / running[2]
    print("running means", avg.cpu().numpy().tolist())
    with torch.no_grad():
        fine = torch.linspace(0.0, 2.0, 3 * args.n_t, device=device)
        extrap = rk4(func, target[0, :4], fine)
    np.save("node_extrap.npy", extrap.cpu().numpy())
    print("extrap", tuple(extrap.shape), extrap.cpu().dtype)


if __name__ == "__main__":
    main()
