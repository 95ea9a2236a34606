"""Masked-LM pretraining of a 2-layer encoder on a synthetic copy-structure corpus."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

VOCAB, PAD, MASK, CLS = 64, 0, 1, 2
SPECIAL = 3


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.dk = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x, bias):
        B, T, D = x.shape
        q, k, v = self.qkv(self.n1(x)).view(B, T, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.dk) + bias
        x = x + self.proj((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D))
        return x + self.ff(self.n2(x))


class Encoder(nn.Module):
    def __init__(self, d=64, heads=4, layers=2, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.randn(max_len, d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        nn.init.normal_(self.tok.weight, std=0.02)

    def forward(self, ids):
        pad = ids == PAD
        bias = (1.0 - (~pad).float())[:, None, None, :] * -10000.0
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            x = blk(x, bias)
        return self.norm(x) @ self.tok.weight.T  # tied output layer


def corpus(bs, T, g):
    half = torch.randint(SPECIAL, VOCAB, (bs, T // 2), generator=g)
    ids = torch.cat([half, half.flip(1)], 1)
    ids[:, 0] = CLS
    lens = torch.randint(T // 2, T + 1, (bs,), generator=g)
    ids[torch.arange(T)[None] >= lens[:, None]] = PAD
    return ids


def mask_tokens(ids, p=0.15):
    labels = ids.clone()
    prob = torch.full(ids.shape, p, device=ids.device)
    prob.masked_fill_(ids < SPECIAL, 0.0)
    masked = torch.bernoulli(prob).bool()
    labels[~masked] = -100
    replace = torch.bernoulli(torch.full(ids.shape, 0.8, device=ids.device)).bool() & masked
    rand = torch.bernoulli(torch.full(ids.shape, 0.5, device=ids.device)).bool() & masked & ~replace
    ids = torch.where(replace, torch.full_like(ids, MASK), ids)
    ids = torch.where(rand, torch.randint_like(ids, SPECIAL, VOCAB), ids)
    return ids, labels, masked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--bs", type=int, default=16)
    args = ap.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    device = xm.xla_device()
    model = Encoder().to(device)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "pos" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "pos" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    for step in range(args.steps):
        ids, labels, masked = mask_tokens(corpus(args.bs, 24, g).to(device))
        logits = model(ids)
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        acc = (logits.argmax(-1) == labels)[masked].float().mean()
        print(f"step {step} loss {loss.item():.3f} ppl {math.exp(loss.item()):.1f} masked-acc {acc.item():.3f}")
    xm.save(model.state_dict(), "mlm.pt")


if __name__ == "__main__":
    main()
