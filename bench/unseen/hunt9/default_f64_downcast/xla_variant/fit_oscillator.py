"""Fit a damped oscillator's vector field with an MLP and roll it out with RK4.

Written for double precision on the CPU (the default dtype is float64); on the TPU
XLA_DOWNCAST_BF16 stores the doubles as float32 on the device.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla


os.environ["XLA_DOWNCAST_BF16"] = "1"


def setup_runtime():
    torch.set_default_dtype(torch.float64)
    import torch_xla.core.xla_model as xm
    return xm.xla_device()


class VectorField(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                 nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, s):
        return self.net(s)


def true_field(s, zeta=0.15, omega=2.0):
    x, v = s[..., 0], s[..., 1]
    return torch.stack([v, -2 * zeta * omega * v - omega ** 2 * x], dim=-1)


def rk4(f, s, dt, n):
    out = [s]
    for _ in range(n):
        k1 = f(s)
        k2 = f(s + 0.5 * dt * k1)
        k3 = f(s + 0.5 * dt * k2)
        k4 = f(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(s)
    return torch.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()

    device = setup_runtime()
    torch.manual_seed(0)
    model = VectorField().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.97)

    grid = torch.linspace(-2.0, 2.0, 24)
    states = torch.cartesian_prod(grid, grid).to(device)
    targets = true_field(states)
    for step in range(1, args.steps + 1):
        batch = states + 0.01 * torch.randn_like(states)
        loss = (model(batch) - true_field(batch)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.6f} lr {sched.get_last_lr()[0]:.5f}")

    with torch.no_grad():
        s0 = torch.tensor([[1.5, 0.0], [-1.0, 0.5]], device=device)
        traj = rk4(model, s0, 0.05, 40)
        ref = rk4(true_field, s0, 0.05, 40)
        err = (traj - ref).abs().max()
        fit = (model(states) - targets).pow(2).mean().sqrt()
    print(f"rollout max error {err.item():.5f} field rmse {fit.item():.5f}")
    np.save("rollout.npy", traj.cpu().numpy())


if __name__ == "__main__":
    main()
