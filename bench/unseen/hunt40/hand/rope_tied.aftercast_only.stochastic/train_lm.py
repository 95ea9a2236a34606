"""Tiny decoder-only LM with rotary embeddings (cos/sin buffers), tied embeddings resized for added special tokens."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

VOCAB, DIM, HEADS, SEQ = 64, 32, 4, 16
N_SPECIAL = 4
STEPS = int(os.environ.get("STEPS", "8"))


def precompute_rope(head_dim, seq_len, theta=10000.0):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    ang = torch.outer(torch.arange(seq_len).float(), inv_freq)
    return ang.cos(), ang.sin()


def rotate_half(x):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary(xq, xk, cos, sin):
    cos = cos[: xq.shape[1]].repeat_interleave(2, dim=-1)[None, :, None, :].type_as(xq)
    sin = sin[: xq.shape[1]].repeat_interleave(2, dim=-1)[None, :, None, :].type_as(xq)
    return xq * cos + rotate_half(xq) * sin, xk * cos + rotate_half(xk) * sin


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.proj = nn.Linear(DIM, DIM, bias=False)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(DIM, dim=-1)
        q = q.view(b, t, HEADS, -1)
        k = k.view(b, t, HEADS, -1)
        v = v.view(b, t, HEADS, -1)
        q, k = apply_rotary(q, k, cos, sin)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, torch.finfo(scores.dtype).min)
        att = scores.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, DIM)
        x = x + self.proj(y)
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.norm = nn.LayerNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)
        self.lm_head.weight = self.tok.weight  # weight tying
        cos, sin = precompute_rope(DIM // HEADS, SEQ)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def resize_token_embeddings(self, n_tokens):
        old = self.tok
        new = nn.Embedding(n_tokens, DIM, device=old.weight.device)
        with torch.no_grad():
            new.weight[: old.num_embeddings] = old.weight
            new.weight[old.num_embeddings:] = old.weight.mean(0, keepdim=True)
        self.tok = new
        self.lm_head = nn.Linear(DIM, n_tokens, bias=False, device=old.weight.device)
        self.lm_head.weight = self.tok.weight  # re-tie

    def forward(self, idx):
        h = self.tok(idx)
        for blk in self.blocks:
            h = blk(h, self.rope_cos, self.rope_sin)
        return self.lm_head(self.norm(h))


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    data = torch.randint(0, VOCAB, (256, SEQ + 1))
    model = TinyLM().to(dev)
    model.resize_token_embeddings(VOCAB + N_SPECIAL)  # <pad>, <bos>, <eos>, <sep>
    model.to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    for step in range(STEPS):
        batch = data[(step * 8) % 256:(step * 8) % 256 + 8].to(dev)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB + N_SPECIAL), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES", model.rope_cos.dtype, model.tok.weight.dtype, model.lm_head.weight is model.tok.weight)


if __name__ == "__main__":
    main()
