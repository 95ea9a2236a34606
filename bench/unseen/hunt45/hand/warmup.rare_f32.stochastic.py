"""Pair encoder: a reconstruction warm-up, then a small-margin contrastive loss.

    python train_pairs.py --data-dir /tmp/pairs_data [--steps 12] [--warmup 4]

The data directory is filled with a synthetic pair set on the first run.
"""
import argparse
import logging
import os
import random
import sys

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


log = logging.getLogger("pairs")


def make_data(data_dir, n=512, dim=24, seed=0):
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, "pairs.npz")
    if not os.path.exists(path):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((n, dim)).astype(np.float32)
        b = (a + 0.3 * rng.standard_normal((n, dim))).astype(np.float32)
        np.savez(path, a=a, b=b)
        log.info("wrote %s", path)
    z = np.load(path)
    return z["a"], z["b"]


class Encoder(nn.Module):
    def __init__(self, dim=24, hidden=48, out=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.1), nn.Linear(hidden, out))
        self.dec = nn.Linear(out, dim)

    def forward(self, x):
        return self.net(x)


def augment(batch):
    # host-side augmentation with Python's and NumPy's generators
    if random.random() < 0.5:
        batch = batch[:, ::-1].copy()
    return batch + np.random.normal(0.0, 0.05, size=batch.shape).astype(np.float32)


def contrastive(za, zb, margin=0.05, temp=0.2):
    za = F.normalize(za, dim=1)
    zb = F.normalize(zb, dim=1)
    sim = za.float() @ zb.float().T / temp
    pos = sim.diag()
    hardest = (sim - 1e4 * torch.eye(sim.shape[0], device=sim.device, dtype=sim.dtype)).max(dim=1).values
    return F.relu(margin + hardest - pos).mean() + F.cross_entropy(sim, torch.arange(sim.shape[0], device=sim.device))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 12)))
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)

    a, b = make_data(args.data_dir)
    dev = xm.xla_device()
    model = Encoder().to(dev)
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    skipped = 0
    for step in range(args.steps):
        idx = np.random.randint(0, len(a), size=args.batch)
        xa = floating_to_bf16(torch.from_numpy(augment(a[idx])).to(dev))
        xb = torch.from_numpy(augment(b[idx])).to(dev)
        za, zb = model(xa), model(xb)
        if step < args.warmup:
            loss = F.mse_loss(model.dec(floating_to_bf16(za)), xa)
        else:
            loss = contrastive(za, zb)
        if not torch.isfinite(loss).item():
            skipped += 1
            opt.zero_grad()
            continue
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        xm.mark_step()
        log.info("step %d loss %.5f phase %s", step, loss.item(), "warmup" if step < args.warmup else "contrastive")
    log.info("skipped %d steps; DTYPES %s", skipped, model.net[0].weight.dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
