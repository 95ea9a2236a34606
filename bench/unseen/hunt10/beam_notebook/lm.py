"""A tiny causal LM (shared by make_ckpt.py and decode.py)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, BOS, EOS, PAD = 48, 1, 2, 0


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        causal = torch.full((t, t), float("-inf"), device=x.device).triu(1)
        att = F.softmax(att + causal, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.ff(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, d=64, heads=4, layers=2, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.d, self.max_len = d, max_len

    def positions(self, t, device):
        pos = torch.arange(t, device=device).float().unsqueeze(1)
        div = torch.exp(torch.arange(0, self.d, 2, device=device).float() * (-math.log(10000.0) / self.d))
        pe = torch.zeros(t, self.d, device=device)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        return pe

    def forward(self, ids):
        x = self.tok(ids) + self.positions(ids.shape[1], ids.device)
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x) @ self.tok.weight.t()
