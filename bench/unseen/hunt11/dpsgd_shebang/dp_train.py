#!/usr/bin/env -S XLA_USE_BF16=1 python3
"""DP-SGD on a small tabular classifier: per-sample gradients with torch.func (vmap of grad
through functional_call), per-sample clipping to C, Gaussian noise, and a simple RDP-free
privacy estimate printed at the end. Run it as ./dp_train.py --steps 200."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.func import functional_call, grad, vmap


def make_data(n, d, gen):
    w = torch.randn(d, 3, generator=gen)
    x = torch.randn(n, d, generator=gen)
    y = (x @ w + 0.5 * torch.randn(n, 3, generator=gen)).argmax(1)
    return x, y


def build(d):
    return nn.Sequential(nn.Linear(d, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 3))


def per_sample_grads(model, params, buffers, x, y):
    def loss_one(p, b, xi, yi):
        out = functional_call(model, (p, b), (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    return vmap(grad(loss_one), in_dims=(None, None, 0, 0))(params, buffers, x, y)


def privatise(grads, clip, sigma, batch):
    flat = torch.cat([g.reshape(batch, -1) for g in grads.values()], 1)
    norms = flat.norm(dim=1)
    factor = (clip / (norms + 1e-6)).clamp(max=1.0)
    out = {}
    for name, g in grads.items():
        summed = torch.einsum("b,b...->...", factor, g)
        out[name] = (summed + sigma * clip * torch.randn_like(summed)) / batch
    return out, norms, (norms > clip).float().mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--sigma", type=float, default=1.1)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    device = torch_xla.device()
    x_all, y_all = make_data(4096, 20, gen)
    model = build(20).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    buffers = {k: v for k, v in model.named_buffers()}
    norm_log = []
    for step in range(args.steps):
        idx = torch.randint(0, x_all.shape[0], (args.batch,), generator=gen)
        xb, yb = x_all[idx].to(device), y_all[idx].to(device)
        params = {k: v.detach() for k, v in model.named_parameters()}
        grads = per_sample_grads(model, params, buffers, xb, yb)
        noisy, norms, clipped = privatise(grads, args.clip, args.sigma, args.batch)
        for name, p in model.named_parameters():
            p.grad = noisy[name]
        xm.optimizer_step(opt)
        with torch.no_grad():
            loss = F.cross_entropy(model(xb), yb)
        torch_xla.sync()
        norm_log.append(norms.cpu())
        print(f"step {step} loss {loss.item():.4f} clipped {clipped.item():.2f} median norm {norms.median().item():.3f}")

    with torch.no_grad():
        acc = (model(x_all.to(device)).argmax(1) == y_all.to(device)).float().mean()
    norms = torch.cat(norm_log).numpy()
    q = args.batch / x_all.shape[0]
    eps = q * math.sqrt(args.steps * math.log(1 / 1e-5)) / args.sigma
    np.save("dp_norms.npy", norms)
    print(f"accuracy {acc.item():.3f} norms {norms.dtype} p90 {np.quantile(norms, 0.9):.3f} eps~{eps:.2f}")


if __name__ == "__main__":
    main()
