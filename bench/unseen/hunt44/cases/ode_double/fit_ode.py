"""Fit the vector field of a damped oscillator with a neural ODE: hand-written RK4 steps, the model in float64
(`.double()`), trajectories from NumPy, L-BFGS on the whole small problem."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", "4"))


class Field(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, y):
        return self.f(y)


def rk4_step(f, y, dt):
    k1 = f(y)
    k2 = f(y + 0.5 * dt * k1)
    k3 = f(y + 0.5 * dt * k2)
    k4 = f(y + dt * k3)
    return y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def simulate(n_traj=16, n_t=5, dt=0.1, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n_traj, 2))
    out = [y]
    a = np.array([[0.0, 1.0], [-1.0, -0.2]])
    for _ in range(n_t - 1):
        y = y + dt * y @ a.T
        out.append(y)
    return np.stack(out, 1)  # float64 (n_traj, n_t, 2)


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    traj = torch.from_numpy(simulate()).to(dev)
    dt = 0.1
    model = Field().double().to(dev)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=2, history_size=3)

    def closure():
        opt.zero_grad()
        y = traj[:, 0]
        loss = 0.0
        for t in range(1, traj.shape[1]):
            y = rk4_step(model, y, dt)
            loss = loss + (y - traj[:, t]).pow(2).mean()
        loss = loss / (traj.shape[1] - 1)
        loss.backward()
        return loss

    for step in range(STEPS):
        loss = opt.step(closure)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.6f}")
    print("DTYPES", next(model.parameters()).dtype, traj.dtype, loss.dtype)
    rollout = traj[:, 0]
    with torch.no_grad():
        for _ in range(5):
            rollout = rk4_step(model, rollout, dt)
    np.save(os.path.join(os.environ.get("WORK_DIR", "/tmp"), "hunt44_rollout.npy"), rollout.cpu().numpy())
    print("rollout", rollout.cpu().dtype)


if __name__ == "__main__":
    main()
