"""Sequence classifier that already runs its forward under torch.autocast, and still sets the legacy switch
("belt and braces" from the days both were advised). The head is an nn.LazyLinear, initialised by a dry run."""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEQ, D, VOCAB, CLASSES = 16, 32, 50, 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.ln2 = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(D), dim=-1)
        x = x + att @ v
        return x + self.ff(self.ln2(x))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.zeros(SEQ, D))
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.LazyLinear(CLASSES)

    def forward(self, ids):
        h = self.blocks(self.emb(ids) + self.pos)
        return self.head(h.mean(1))


def batch(g, n=32):
    ids = torch.randint(0, VOCAB, (n, SEQ), generator=g)
    y = (ids[:, :4].sum(1) % CLASSES)
    return ids, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--out", default="out")
    args = ap.parse_args()

    import torch_xla
    import torch_xla.core.xla_model as xm

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    model = Classifier()
    with torch.no_grad():
        model(torch.zeros(1, SEQ, dtype=torch.long))  # materialise the lazy head (on the CPU: XLA cannot)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)

    for step in range(args.steps):
        ids, y = batch(g)
        ids, y = ids.to(device), y.to(device)
        with torch.autocast("xla", dtype=torch.bfloat16):
            logits = model(ids)
            loss = F.cross_entropy(logits, y, label_smoothing=0.05)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    ids, y = batch(g, 128)
    with torch.no_grad(), torch.autocast("xla", dtype=torch.bfloat16):
        logits = model(ids.to(device))
    probs = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    acc = float((probs.argmax(1) == y.numpy()).mean())
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "probs.npy"), probs)
    with open(os.path.join(args.out, "eval.json"), "w") as f:
        json.dump({"acc": acc, "head_dtype": str(model.head.weight.dtype)}, f)
    print(f"acc {acc:.3f}")


if __name__ == "__main__":
    main()
