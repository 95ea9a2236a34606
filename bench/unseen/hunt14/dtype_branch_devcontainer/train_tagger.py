"""Token classification with a tiny attention encoder.

Norm and softmax are written to be safe in half precision: when the activations arrive in a 16-bit
dtype they are computed in float32 and cast back (as the big codebases do), otherwise directly.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

HALF_DTYPES = (torch.float16, torch.bfloat16)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        if x.dtype in HALF_DTYPES:
            x32 = x.float()
            x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * x32.to(x.dtype)
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def stable_softmax(scores):
    if scores.dtype == torch.float32:
        return scores.softmax(-1)
    return scores.float().softmax(-1).to(scores.dtype)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.norm1 = RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.norm2 = RMSNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        att = stable_softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.h))
        x = x + self.out((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class Tagger(nn.Module):
    def __init__(self, vocab=50, d=32, heads=4, n_tags=6, depth=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(max_len, d) * 0.02)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(depth)])
        self.norm = RMSNorm(d)
        self.cls = nn.Linear(d, n_tags)

    def forward(self, ids):
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.cls(self.norm(x))


def make_batch(gen, b, t, vocab=50, n_tags=6):
    ids = torch.randint(0, vocab, (b, t), generator=gen)
    tags = (ids % n_tags + torch.roll(ids, 1, 1) % 2) % n_tags
    return ids, tags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    device = xm.xla_device()
    torch.manual_seed(0)
    model = Tagger().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(1)
    for step in range(args.steps):
        ids, tags = make_batch(gen, 32, 24)
        ids, tags = ids.to(device), tags.to(device)
        logits = model(ids)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tags.reshape(-1))
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    ids, tags = make_batch(gen, 64, 24)
    with torch.no_grad():
        pred = model(ids.to(device)).argmax(-1).cpu()
    print(f"token acc {(pred == tags).float().mean().item():.4f}")


if __name__ == "__main__":
    main()
