"""Meta-SGD on sine regression: functional fast weights with torch.func.functional_call and learnable per-parameter
inner learning rates."""
import argparse
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call
import torch_xla.core.xla_model as xm


class Regressor(nn.Module):
    def __init__(self, hidden=40):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def sample_tasks(rng, n_tasks, k):
    amp = rng.uniform(0.1, 5.0, size=(n_tasks, 1, 1))
    phase = rng.uniform(0, np.pi, size=(n_tasks, 1, 1))
    xs = rng.uniform(-5, 5, size=(n_tasks, 2 * k, 1))
    ys = amp * np.sin(xs + phase)
    return torch.from_numpy(xs).float(), torch.from_numpy(ys).float()


def inner_adapt(model, params, lrs, x, y, steps):
    fast = dict(params)
    for _ in range(steps):
        loss = F.mse_loss(functional_call(model, fast, (x,)), y)
        grads = torch.autograd.grad(loss, list(fast.values()), create_graph=True)
        fast = {n: w - lrs[n] * g for (n, w), g in zip(fast.items(), grads)}
    return fast


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--shots", type=int, default=5)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = Regressor().to(dev)
    params = {n: p.detach().clone().requires_grad_(True) for n, p in model.named_parameters()}
    lrs = {n: torch.full_like(p, 0.01, requires_grad=True) for n, p in params.items()}
    meta_opt = torch.optim.Adam(list(params.values()) + list(lrs.values()), lr=1e-3)
    for step in range(args.steps):
        xs, ys = sample_tasks(rng, args.tasks, args.shots)
        xs, ys = xs.to(dev), ys.to(dev)
        meta_loss = 0.0
        for t in range(args.tasks):
            xs_t, ys_t = xs[t, :args.shots], ys[t, :args.shots]
            xq_t, yq_t = xs[t, args.shots:], ys[t, args.shots:]
            fast = inner_adapt(model, params, lrs, xs_t, ys_t, steps=1)
            meta_loss = meta_loss + F.mse_loss(functional_call(model, fast, (xq_t,)), yq_t)
        meta_loss = meta_loss / args.tasks
        meta_opt.zero_grad()
        meta_loss.backward()
        meta_opt.step()
        xm.mark_step()
        print(f"step {step} meta-loss {meta_loss.item():.4f}")
    mean_lr = torch.stack([v.detach().mean() for v in lrs.values()]).cpu()
    print("DTYPES", params["net.0.weight"].dtype, lrs["net.0.weight"].dtype, mean_lr.dtype, mean_lr.numpy().round(4))


if __name__ == "__main__":
    main()
