"""Padded-sequence text classifier: a small Transformer encoder built from
nn.MultiheadAttention with a key padding mask, sinusoidal positions, masked
mean pooling. Gradient norms are collected on the device and summarised at the end.
"""
import argparse
import math
import os

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ.setdefault("XLA_USE_BF16", "1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

VOCAB, PAD, CLASSES, MAXLEN = 200, 0, 3, 24


def sinusoid(n, d):
    pos = torch.arange(n).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, pad_mask):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, key_padding_mask=pad_mask, need_weights=False)
        x = x + a
        return x + self.ff(self.ln2(x))


class Classifier(nn.Module):
    def __init__(self, d=48, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d, padding_idx=PAD)
        self.pe = sinusoid(MAXLEN, d)  # fixed table, kept out of the state dict
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, CLASSES)

    def forward(self, ids):
        pad_mask = ids == PAD
        x = self.emb(ids) * math.sqrt(self.emb.embedding_dim)
        x = x + self.pe[: ids.shape[1]].to(x.device)
        for blk in self.blocks:
            x = blk(x, pad_mask)
        x = self.norm(x)
        keep = ~pad_mask.unsqueeze(-1)
        summed = torch.where(keep, x, torch.zeros_like(x)).sum(1)
        return self.head(summed / keep.sum(1).clamp_min(1))


def batch(gen, n):
    lengths = torch.randint(4, MAXLEN + 1, (n,), generator=gen)
    ids = torch.randint(1, VOCAB, (n, MAXLEN), generator=gen)
    ids[torch.arange(MAXLEN)[None, :] >= lengths[:, None]] = PAD
    y = (ids[:, 0] % CLASSES)  # the class is carried by the first token
    return ids, y


def param_groups(model, wd):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or name.startswith("emb") else decay).append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--clip", type=float, default=1.0)
    args = ap.parse_args()

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = xm.xla_device()
    model = Classifier().to(device)
    opt = torch.optim.AdamW(param_groups(model, 0.05), lr=1e-3)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    norms = []
    for step in range(1, args.steps + 1):
        ids, y = batch(gen, args.batch)
        ids, y = ids.to(device), y.to(device)
        logits = model(ids)
        loss = crit(logits, y)
        opt.zero_grad()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip))
        xm.optimizer_step(opt)
        xm.mark_step()
        acc = (logits.argmax(-1) == y).float().mean()
        print(f"step {step} loss {loss.item():.4f} acc {acc.item():.3f} gnorm {norms[-1].item():.3f}")

    gn = torch.stack(norms).cpu().numpy()
    print("grad norm p50 %.3f p90 %.3f clipped %d/%d" % (
        np.percentile(gn, 50), np.percentile(gn, 90), int((gn > args.clip).sum()), len(gn)))


if __name__ == "__main__":
    main()
