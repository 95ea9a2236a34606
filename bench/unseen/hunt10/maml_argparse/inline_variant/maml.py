"""First-order-free MAML on sine regression tasks, run on an XLA device.

python maml.py --bf16 --meta-steps 12
"""
import argparse
import math
import os

parser = argparse.ArgumentParser()
parser.add_argument("--bf16", action="store_true")
parser.add_argument("--meta-steps", type=int, default=12)
parser.add_argument("--inner-lr", type=float, default=0.05)
parser.add_argument("--tasks", type=int, default=4)
args = parser.parse_args()
os.environ["XLA_USE_BF16"] = "1"  # inline variant: the write unconditional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call
import torch_xla
import torch_xla.core.xla_model as xm


class Regressor(nn.Module):
    def __init__(self, hidden=40):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(1, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x)


def sample_tasks(rng, n_tasks, k_shot):
    amps = rng.uniform(0.1, 5.0, size=n_tasks)
    phases = rng.uniform(0, math.pi, size=n_tasks)
    xs = rng.uniform(-5, 5, size=(n_tasks, 2 * k_shot, 1))
    ys = amps[:, None, None] * np.sin(xs + phases[:, None, None])
    return xs, ys  # float64


def adapt(model, params, x, y, inner_lr, steps=1):
    for _ in range(steps):
        pred = functional_call(model, params, (x,))
        loss = F.mse_loss(pred, y)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
        params = {n: p - inner_lr * g for (n, p), g in zip(params.items(), grads)}
    return params


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Regressor().to(device)
    meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    k = 10
    for step in range(args.meta_steps):
        xs, ys = sample_tasks(rng, args.tasks, k)
        xs = torch.from_numpy(xs).float().to(device)
        ys = torch.from_numpy(ys).float().to(device)
        meta_opt.zero_grad()
        outer = torch.zeros((), device=device)
        for t in range(args.tasks):
            params = dict(model.named_parameters())
            fast = adapt(model, params, xs[t, :k], ys[t, :k], args.inner_lr)
            q_pred = functional_call(model, fast, (xs[t, k:],))
            outer = outer + F.mse_loss(q_pred, ys[t, k:])
        outer = outer / args.tasks
        outer.backward()
        xm.optimizer_step(meta_opt)
        torch_xla.sync()
        xm.master_print(f"meta step {step} loss {outer.item():.4f}")

    # few-shot evaluation on a fixed task
    grid = torch.linspace(-5, 5, 50, device=device).unsqueeze(1)
    truth = 2.0 * torch.sin(grid + 0.5)
    sx = grid[::10]
    sy = truth[::10]
    fast = adapt(model, dict(model.named_parameters()), sx, sy, args.inner_lr, steps=3)
    with torch.no_grad():
        pred = functional_call(model, fast, (grid,))
    torch_xla.sync()
    err = (pred - truth).abs().mean().item()
    curve = pred.squeeze(1).cpu().numpy()
    np.save("maml_curve.npy", curve)
    print("eval mae", round(err, 4), "curve", curve.dtype, curve.shape)


if __name__ == "__main__":
    main()
