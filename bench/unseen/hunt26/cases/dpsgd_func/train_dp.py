"""DP-SGD on a tabular classifier: per-sample gradients with torch.func, clipping and Gaussian noise
in a hand-written optimizer, gradient accumulation over micro-batches."""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
import torch_xla
import torch_xla.core.xla_model as xm

N_FEAT, N_CLASS = 24, 5


class DPMomentumSGD(torch.optim.Optimizer):
    """SGD with momentum on privatised gradients: each p.grad already holds the clipped per-sample sum."""

    def __init__(self, params, lr=0.1, momentum=0.9, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch=256):
        defaults = dict(lr=lr, momentum=momentum, noise_multiplier=noise_multiplier,
                        max_grad_norm=max_grad_norm, expected_batch=expected_batch)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            std = group["noise_multiplier"] * group["max_grad_norm"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                noisy = (p.grad + std * torch.randn_like(p.grad)) / group["expected_batch"]
                buf = state["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(noisy)
                p.add_(buf, alpha=-group["lr"])


class TabularNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_FEAT, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, N_CLASS))

    def forward(self, x):
        return self.net(x)


def make_data(n, seed):
    w = np.random.default_rng(0).normal(size=(N_FEAT, N_CLASS))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, N_FEAT)).astype(np.float32)
    y = (x @ w + 0.5 * rng.normal(size=(n, N_CLASS))).argmax(1)
    return torch.from_numpy(x), torch.from_numpy(y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--noise", type=float, default=1.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--micro", type=int, default=64)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--out", default="out/dp")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    device = torch_xla.device()
    torch.manual_seed(0)

    x_all, y_all = make_data(8192, seed=1)
    x_val, y_val = make_data(1024, seed=2)
    model = TabularNet().to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    opt = DPMomentumSGD(model.parameters(), lr=0.5, noise_multiplier=args.noise,
                        max_grad_norm=args.clip, expected_batch=args.micro * args.accum)

    def sample_loss(p, xi, yi):
        logits = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(logits, yi.unsqueeze(0))

    per_sample_grads = vmap(grad(sample_loss), in_dims=(None, 0, 0))
    g = torch.Generator().manual_seed(3)
    log = []
    for step in range(args.steps):
        losses = []
        summed = {k: torch.zeros_like(v) for k, v in params.items()}
        for _ in range(args.accum):
            idx = torch.randint(0, x_all.shape[0], (args.micro,), generator=g)
            xb, yb = x_all[idx].to(device), y_all[idx].to(device)
            grads = per_sample_grads(params, xb, yb)
            norms = torch.sqrt(sum(gr.flatten(1).pow(2).sum(1) for gr in grads.values()))
            factor = (args.clip / (norms + 1e-6)).clamp(max=1.0)
            for k, gr in grads.items():
                summed[k] += torch.einsum("b,b...->...", factor, gr)
            with torch.no_grad():
                losses.append(F.cross_entropy(model(xb), yb))
        for name, p in model.named_parameters():
            p.grad = summed[name]
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch_xla.sync()
        if step % 20 == 0 or step == args.steps - 1:
            with torch.no_grad():
                logits = model(x_val.to(device))
                acc = (logits.argmax(1).cpu() == y_val).float().mean().item()
            row = {"step": step, "train_loss": torch.stack(losses).mean().item(), "val_acc": acc,
                   "clip_frac": (factor < 1).float().mean().item()}
            log.append(row)
            print(json.dumps(row))

    # privacy accounting is done offline from the sweep logs
    eps_proxy = math.sqrt(args.steps) / args.noise
    with open(os.path.join(args.out, "log.json"), "w") as fh:
        json.dump({"noise": args.noise, "clip": args.clip, "eps_proxy": eps_proxy, "log": log}, fh)
    xm.save(model.state_dict(), os.path.join(args.out, "model.pt"))


if __name__ == "__main__":
    main()
