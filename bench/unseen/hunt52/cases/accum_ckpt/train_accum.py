"""Deep residual MLP with activation checkpointing and gradient accumulation through a hand-written no_sync()."""
import contextlib
import os

os.environ.setdefault("XLA_DOWNCAST_BF16", "1")

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
from torch.utils.checkpoint import checkpoint

STEPS = int(os.environ.get("STEPS", 12))
ACCUM = 4
CLIP_EVERY = 2


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln(x)))))


class DeepMLP(nn.Module):
    def __init__(self, d_in=16, d=32, depth=4):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))
        self.out = nn.Linear(d, 1)
        self.grad_ckpt = True

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            if self.grad_ckpt and self.training:
                h = checkpoint(blk, h, use_reentrant=False, preserve_rng_state=True)
            else:
                h = blk(h)
        return self.out(h).squeeze(-1)


class GradSync(nn.Module):
    """Minimal data-parallel-style wrapper: all-reduces gradients after backward unless inside no_sync()."""

    def __init__(self, module):
        super().__init__()
        self.module = module
        self.require_sync = True

    def forward(self, *a, **k):
        return self.module(*a, **k)

    @contextlib.contextmanager
    def no_sync(self):
        prev, self.require_sync = self.require_sync, False
        try:
            yield
        finally:
            self.require_sync = prev

    def sync_grads(self):
        if self.require_sync and xr.world_size() > 1:
            xm.all_reduce(xm.REDUCE_SUM, [p.grad for p in self.module.parameters() if p.grad is not None],
                          scale=1.0 / xr.world_size())


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = GradSync(DeepMLP()).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)

    g = torch.Generator().manual_seed(5)
    X = torch.randn(256, 16, generator=g)
    Y = (X[:, :4].sum(1) + 0.1 * torch.randn(256, generator=g))
    running = torch.zeros((), device=dev, dtype=torch.float64)
    micro = 0
    for step in range(STEPS):
        for k in range(ACCUM):
            idx = torch.randint(0, 256, (16,), generator=g)
            xb, yb = X[idx].to(dev), Y[idx].to(dev)
            ctx = model.no_sync() if k < ACCUM - 1 else contextlib.nullcontext()
            with ctx:
                pred = model(xb)
                loss = F.mse_loss(pred, yb) / ACCUM
                loss.backward()
                model.sync_grads()
            running += loss.detach()
            micro += 1
        if step % CLIP_EVERY == 0:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        xm.mark_step()
        print(f"step {step} loss {loss.item() * ACCUM:.4f}")
    print("DTYPES", model.module.inp.weight.dtype, running.dtype, pred.dtype)
    print("mean micro loss", running.item() / micro)


if __name__ == "__main__":
    main()
