"""A small pre-norm transformer encoder for sentence classification."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, key_padding):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, key_padding):
        x = x + self.attn(self.ln1(x), key_padding)
        return x + self.mlp(self.ln2(x))


class SentimentTransformer(nn.Module):
    def __init__(self, vocab_size: int, max_len: int, dim: int = 64, heads: int = 4, layers: int = 2,
                 classes: int = 3, pad_id: int = 0):
        super().__init__()
        self.pad_id = pad_id
        self.tok = nn.Embedding(vocab_size, dim, padding_idx=pad_id)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def encode(self, ids):
        """Mean-pooled sentence embeddings (batch, dim)."""
        key_padding = ids.eq(self.pad_id)
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(positions)[None]
        for block in self.blocks:
            x = block(x, key_padding)
        x = self.ln(x)
        keep = (~key_padding).float().unsqueeze(-1)
        return (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)

    def forward(self, ids):
        return self.head(self.encode(ids))


def load(checkpoint_dir: str) -> tuple[SentimentTransformer, dict]:
    """The model with its weights (on the CPU) and its config, from a checkpoint directory."""
    import json
    import os

    with open(os.path.join(checkpoint_dir, "config.json")) as f:
        config = json.load(f)
    model = SentimentTransformer(**config["model"])
    state = torch.load(os.path.join(checkpoint_dir, "model.pt"), map_location="cpu")
    model.load_state_dict(state)
    return model, config


def probabilities(logits):
    return F.softmax(logits, dim=-1)
