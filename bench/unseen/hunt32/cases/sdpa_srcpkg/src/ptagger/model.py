import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoid_table(n, d):
    pos = torch.arange(n).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class EncoderLayer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, attn_bias):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias)
        x = x + self.o(y.transpose(1, 2).reshape(B, T, D))
        return x + self.ff(self.ln2(x))


class PosTagger(nn.Module):
    def __init__(self, vocab, n_tags, d=32, h=4, layers=2, max_len=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.register_buffer("pe", sinusoid_table(max_len, d), persistent=False)
        self.layers = nn.ModuleList([EncoderLayer(d, h) for _ in range(layers)])
        self.cls = nn.Linear(d, n_tags)

    def forward(self, ids, attn_bias):
        x = self.emb(ids) + self.pe[: ids.size(1)]
        for layer in self.layers:
            x = layer(x, attn_bias)
        return self.cls(x)
