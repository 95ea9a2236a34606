"""Einsum attention classifier over padded token sequences; positions from a cumsum on the mask."""
import os

os.environ["XLA_USE_BF16"] = "1"

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

VOCAB, PAD, D, HEADS = 200, 0, 64, 4


class EinsumAttention(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x, pad_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(pad_mask[:, None, None, :], -1e4)
        attn = scores.softmax(-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(b, t, d)
        return self.out(ctx)


class Classifier(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.pos = nn.Embedding(64, D)
        self.attn = EinsumAttention()
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, classes)
        self.register_buffer("num_batches", torch.tensor(0))

    def forward(self, ids):
        pad_mask = ids.eq(PAD)
        positions = torch.cumsum((~pad_mask).long(), dim=1) * (~pad_mask).long()
        h = self.emb(ids) + self.pos(positions)
        h = self.norm(h + self.attn(h, pad_mask))
        keep = (~pad_mask).unsqueeze(-1).float()
        pooled = (h * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        if self.training:
            self.num_batches += 1
        return self.head(pooled)


def param_groups(model, wd):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") or "norm" in name or "emb" in name else decay).append(p)
    return [
        {"params": decay, "weight_decay": wd, "lr": 2e-3},
        {"params": no_decay, "weight_decay": 0.0, "lr": 4e-3},
    ]


def batch(g, bs=16, t=20):
    lengths = torch.randint(4, t + 1, (bs,), generator=g)
    ids = torch.randint(1, VOCAB, (bs, t), generator=g)
    ids = torch.where(torch.arange(t)[None, :] < lengths[:, None], ids, torch.zeros_like(ids))
    labels = (ids[:, 0] % 3)
    return ids, labels


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    model = Classifier().to(device)
    opt = torch.optim.AdamW(param_groups(model, 0.05))
    g = torch.Generator().manual_seed(1)
    for step in range(20):
        ids, labels = batch(g)
        ids, labels = ids.to(device), labels.to(device)
        opt.zero_grad()
        logits = model(ids)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        if step % 5 == 0:
            print(step, loss.item(), int(model.num_batches.item()))
    xm.save(model.state_dict(), "attn.pt")


if __name__ == "__main__":
    main()
