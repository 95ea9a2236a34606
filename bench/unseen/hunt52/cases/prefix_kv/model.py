"""A tiny causal LM whose attention accepts per-layer prefix keys/values (prefix tuning)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PrefixAttention(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.n_head, self.dh = n_head, d // n_head
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, prefix=None):
        B, T, D = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.n_head, self.dh).transpose(1, 2) for t in (q, k, v))
        P = 0
        if prefix is not None:
            pk, pv = prefix  # (B, H, P, dh)
            P = pk.shape[2]
            k = torch.cat([pk, k], dim=2)
            v = torch.cat([pv, v], dim=2)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        mask = torch.cat([torch.ones(T, P, dtype=torch.bool, device=x.device), causal], dim=1)
        att = (q @ k.transpose(-1, -2)) / self.dh ** 0.5
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, D))


class Block(nn.Module):
    def __init__(self, d, n_head):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = PrefixAttention(d, n_head)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, prefix=None):
        x = x + self.attn(self.ln1(x), prefix)
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=40, d=32, n_head=4, n_layer=2, ctx=32):
        super().__init__()
        self.cfg = dict(d=d, n_head=n_head, n_layer=n_layer)
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, prefixes=None):
        T = idx.shape[1]
        h = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for i, blk in enumerate(self.blocks):
            h = blk(h, None if prefixes is None else prefixes[i])
        return self.lm_head(self.ln_f(h))


class PrefixEncoder(nn.Module):
    """Learnable prefix, reparametrised through a small MLP (as in prefix tuning)."""

    def __init__(self, n_layer, n_head, dh, n_prefix=4, hidden=32):
        super().__init__()
        self.n_layer, self.n_head, self.dh, self.n_prefix = n_layer, n_head, dh, n_prefix
        self.emb = nn.Parameter(torch.randn(n_prefix, hidden) * 0.02)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_layer * 2 * n_head * dh))

    def forward(self, batch_size):
        kv = self.mlp(self.emb)  # (P, L*2*H*dh)
        kv = kv.view(self.n_prefix, self.n_layer, 2, self.n_head, self.dh).permute(1, 2, 3, 0, 4)
        kv = kv.unsqueeze(2).expand(-1, -1, batch_size, -1, -1, -1)
        return [(kv[i, 0], kv[i, 1]) for i in range(self.n_layer)]
