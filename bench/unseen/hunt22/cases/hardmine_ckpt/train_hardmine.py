"""Hard-example mining with per-sample losses kept on the host, an activation-checkpointed MLP trunk
and a custom autograd clamp with a straight-through backward."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class SoftClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        inside = ((x > ctx.lo) & (x < ctx.hi)).to(g.dtype)
        leak = torch.full_like(g, 0.1)
        return g * torch.where(inside.bool(), torch.ones_like(g), leak), None, None


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        h = SoftClamp.apply(self.fc1(self.norm(x)), -3.0, 3.0)
        return x + self.fc2(F.gelu(h))


class Net(nn.Module):
    def __init__(self, d_in, d, n_cls, depth=3, use_ckpt=True):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))
        self.head = nn.Linear(d, n_cls)
        self.use_ckpt = use_ckpt

    def forward(self, x):
        x = self.inp(x)
        for blk in self.blocks:
            x = checkpoint(blk, x, use_reentrant=False) if self.use_ckpt and self.training else blk(x)
        return self.head(x)


def make_dataset(n, d_in, n_cls, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    w = torch.randn(d_in, n_cls, generator=g)
    y = (x @ w + 0.5 * torch.randn(n, n_cls, generator=g)).argmax(1)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bf16", action="store_true", help="run in bfloat16 on the XLA device")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hard-frac", type=float, default=0.5)
    args = ap.parse_args()
    if args.bf16:
        os.environ["XLA_USE_BF16"] = "1"

    import torch_xla

    device = torch_xla.device()
    x_all, y_all = make_dataset(2000, 32, 6, seed=1)
    n = x_all.shape[0]
    model = Net(32, 64, 6).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    sample_loss = np.full(n, np.inf, dtype=np.float32)

    for epoch in range(args.epochs):
        model.train()
        if epoch == 0:
            order = np.random.default_rng(epoch).permutation(n)
        else:
            hard = np.argsort(-sample_loss)[: int(args.hard_frac * n)]
            rest = np.random.default_rng(epoch).choice(n, n - hard.size, replace=False)
            order = np.concatenate([hard, rest])
        seen = 0.0
        for s in range(0, n, args.batch):
            idx = order[s:s + args.batch]
            xb = x_all[idx].to(device)
            yb = y_all[idx].to(device)
            per = F.cross_entropy(model(xb), yb, reduction="none")
            w = torch.ones_like(per)
            top = torch.topk(per.detach(), k=max(1, per.numel() // 4)).indices
            w[top] = 2.0
            loss = (per * w).sum() / w.sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sample_loss[idx] = per.detach().cpu().numpy()
            seen += loss.item() * len(idx)
        print(f"epoch {epoch} loss {seen / n:.4f} hardest {np.sort(sample_loss)[-3:]}")

    model.eval()
    with torch.no_grad():
        logits = model(x_all.to(device))
        acc = (logits.argmax(1).cpu() == y_all).float().mean().item()
        margin = logits.topk(2, dim=1).values.diff(dim=1).neg().squeeze(1)
    print(f"acc {acc:.3f} median margin {margin.median().item():.3f}")
    np.save("margins.npy", margin.cpu().numpy())


if __name__ == "__main__":
    main()
