"""Deep ensemble of small regressors trained as one vectorised model.

The members' parameters are stacked with torch.func.stack_module_state and the forward of all
members runs at once with vmap(functional_call). One Adam updates the stacked tensors.
Predictive mean and spread go to NumPy for the interval coverage.
"""
import argparse
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.func import functional_call, stack_module_state, vmap


class Member(nn.Module):
    def __init__(self, d_in=8, hidden=32):
        super().__init__()
        self.l1 = nn.Linear(d_in, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.mean = nn.Linear(hidden, 1)
        self.log_var = nn.Linear(hidden, 1)

    def forward(self, x):
        h = F.silu(self.l2(F.silu(self.l1(x))))
        return self.mean(h).squeeze(-1), self.log_var(h).squeeze(-1).clamp(-6, 4)


def dataset(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=(n, 8)).astype(np.float32)
    noise = 0.1 + 0.3 * np.abs(x[:, 0])
    y = np.sin(x[:, 0] * 2) + 0.5 * x[:, 1] + noise * rng.normal(size=n)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    device = xm.xla_device()
    torch.manual_seed(0)
    members = [Member().to(device) for _ in range(args.members)]
    params, buffers = stack_module_state(members)
    base = copy.deepcopy(members[0]).to("meta")

    def one(p, b, x):
        return functional_call(base, (p, b), (x,))

    ensemble = vmap(one, in_dims=(0, 0, None))
    opt = torch.optim.Adam(params.values(), lr=5e-3)

    x_tr, y_tr = dataset(2048, 0)
    for step in range(args.steps):
        idx = torch.randint(0, len(y_tr), (128,))
        xb, yb = x_tr[idx].to(device), y_tr[idx].to(device)
        mu, log_var = ensemble(params, buffers, xb)
        loss = F.gaussian_nll_loss(mu, yb.expand_as(mu), log_var.exp(), reduction="mean") * args.members
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    x_te, y_te = dataset(512, 1)
    with torch.no_grad():
        mu, log_var = ensemble(params, buffers, x_te.to(device))
        mean = mu.mean(0)
        var = (log_var.exp() + mu.pow(2)).mean(0) - mean.pow(2)
    mean_np, std_np = mean.cpu().numpy(), var.clamp_min(1e-6).sqrt().cpu().numpy()
    inside = np.abs(y_te.numpy() - mean_np) <= 1.96 * std_np
    rmse = float(np.sqrt(np.mean((y_te.numpy() - mean_np) ** 2)))
    print(f"test rmse {rmse:.4f} coverage95 {inside.mean():.3f} mean std {std_np.mean():.4f}")


if __name__ == "__main__":
    main()
