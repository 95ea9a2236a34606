"""Tabular regression with a memory-lean Swish: the activation saves only its input and recomputes the
sigmoid in the backward, in float32 for a stable derivative. A learnable per-feature scale is held as a
device tensor and clipped by hand after each step."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class LeanSwish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        xf = x.float()
        s = torch.sigmoid(xf)
        dx = s * (1.0 + xf * (1.0 - s))
        return grad_out * dx.to(grad_out.dtype)


class Regressor(nn.Module):
    def __init__(self, d_in=10, hidden=48):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(d_in))
        self.l1 = nn.Linear(d_in, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = LeanSwish.apply(self.l1(x * self.scale))
        h = LeanSwish.apply(self.l2(h))
        return self.out(h).squeeze(-1)


def make_data(n, rng):
    x = rng.standard_normal((n, 10))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.1 * rng.standard_normal(n)
    return torch.tensor(x.tolist(), dtype=torch.float32), torch.tensor(y.tolist())


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--out", default="out")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x, y = make_data(4096, rng)
    device = torch_xla.device()
    model = Regressor().to(device)
    opt = torch.optim.RMSprop(model.parameters(), lr=3e-3, momentum=0.5)
    scale_bounds = torch.tensor([0.1, 3.0], device=device)

    losses = []
    for step in range(args.steps):
        idx = torch.randint(0, len(x), (128,))
        xb, yb = x[idx].to(device), y[idx].to(device)
        loss = F.huber_loss(model(xb), yb, delta=0.5)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            model.scale.clamp_(scale_bounds[0], scale_bounds[1])
        xm.mark_step()
        losses.append(loss.item())
        if step % 10 == 0:
            print(f"step {step} loss {losses[-1]:.4f}")

    with torch.no_grad():
        pred = model(x[:256].to(device))
    residual = (pred.cpu() - y[:256]).numpy()
    out = {"loss": losses, "rmse": float(np.sqrt((residual ** 2).mean())), "scale": model.scale.tolist()}
    print(json.dumps({"rmse": out["rmse"]}))
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump(out, f)
    return out


if __name__ == "__main__":
    main()
