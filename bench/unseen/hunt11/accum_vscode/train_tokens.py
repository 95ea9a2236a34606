"""Token-mixing classifier with a hand-written squared-ReLU (custom autograd Function),
a learned positional table, label smoothing by hand and gradient accumulation;
the clipped gradient norm of every step is kept and written out."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

VOCAB, SEQ, CLASSES = 64, 32, 5


class SquaredReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.relu(x) ** 2

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        slope = torch.where(x > 0, 2 * x, torch.zeros(1, device=x.device))
        return grad_out * slope


class MixerBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.tok = nn.Linear(SEQ, SEQ)
        self.ch1, self.ch2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        x = x + self.tok(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch2(SquaredReLU.apply(self.ch1(self.norm2(x))))


class TokenMixer(nn.Module):
    def __init__(self, d=64, depth=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.empty(1, SEQ, d))
        nn.init.trunc_normal_(self.pos, std=0.02)
        self.blocks = nn.ModuleList(MixerBlock(d) for _ in range(depth))
        self.head = nn.Linear(d, CLASSES)

    def forward(self, ids):
        x = self.emb(ids) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(x.mean(1))


def smoothed_ce(logits, y, eps=0.1):
    target = torch.full(logits.shape, eps / (CLASSES - 1), device=logits.device)
    target.scatter_(1, y[:, None], 1.0 - eps)
    return -(target * logits.log_softmax(-1)).sum(-1).mean()


def batch(gen, n):
    ids = torch.randint(0, VOCAB, (n, SEQ), generator=gen)
    y = (ids[:, :8].sum(1) + 3 * ids[:, -1]) % CLASSES
    return ids, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--micro", type=int, default=16)
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = xm.xla_device()
    model = TokenMixer().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    norms = []
    for step in range(args.steps):
        running = torch.zeros((), device=device)
        for _ in range(args.accum):
            ids, y = batch(gen, args.micro)
            ids, y = ids.to(device), y.to(device)
            loss = smoothed_ce(model(ids), y) / args.accum
            loss.backward()
            running += loss.detach()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        norms.append(norm)
        xm.optimizer_step(opt)
        opt.zero_grad()
        xm.mark_step()
        print(f"step {step} loss {running.item():.4f} grad-norm {norm.item():.3f}")

    norms = torch.stack(norms).cpu().numpy()
    ids, y = batch(torch.Generator().manual_seed(99), 256)
    with torch.no_grad():
        acc = (model(ids.to(device)).argmax(-1).cpu() == y).float().mean().item()
    np.save("grad_norms.npy", norms)
    print(f"norms {norms.dtype} clipped steps {(norms > 1.0).sum()} / {len(norms)}; held-out accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
