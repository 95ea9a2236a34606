"""Functional training: torch.func.grad_and_value over functional_call, losses picked from a dict."""
import argparse
import functools
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.func import functional_call, grad, grad_and_value, vmap

LOSSES = {
    "mse": F.mse_loss,
    "huber": functools.partial(F.huber_loss, delta=0.5),
    "logcosh": lambda pred, target: torch.log(torch.cosh(pred - target)).mean(),
}


class Net(nn.Module):
    def __init__(self, d_in=10, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, 1)
        self.register_buffer("scale", torch.ones(1))

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x))).squeeze(-1) * self.scale


def make_loss_fn(model, loss_name):
    criterion = LOSSES[loss_name]

    def loss_fn(params, buffers, x, y):
        pred = functional_call(model, (params, buffers), (x,))
        return criterion(pred, y)

    return loss_fn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", default="huber", choices=sorted(LOSSES))
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
    args = ap.parse_args()

    dev = torch_xla.device()
    torch.manual_seed(0)
    model = Net().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = make_loss_fn(model, args.loss)
    step_fn = grad_and_value(loss_fn)
    per_sample = vmap(grad(loss_fn), in_dims=(None, None, 0, 0))

    rng = np.random.default_rng(0)
    true_w = rng.standard_normal(10)
    buffers = dict(model.named_buffers())
    for step in range(args.steps):
        x_np = rng.standard_normal((32, 10))
        y_np = np.sin(x_np @ true_w).astype(np.float32)
        x = torch.from_numpy(x_np).float().to(dev)
        y = torch.from_numpy(y_np).to(dev)
        params = {k: v.detach() for k, v in model.named_parameters()}
        grads, loss = step_fn(params, buffers, x, y)
        for name, p in model.named_parameters():
            p.grad = grads[name]
        opt.step()
        if step % 4 == 0:
            g = per_sample(params, buffers, x[:8, None], y[:8, None])
            norms = torch.stack([gi.flatten(1).norm(dim=1) for gi in g.values()]).double().pow(2).sum(0).sqrt()
            print(f"  per-sample grad norm mean {norms.mean().item():.4f}")
        torch_xla.sync()
        print(f"step {step} {args.loss} {loss.item():.5f}")
    print("DTYPES", next(model.parameters()).dtype, x.dtype, loss.dtype)


if __name__ == "__main__":
    main()
