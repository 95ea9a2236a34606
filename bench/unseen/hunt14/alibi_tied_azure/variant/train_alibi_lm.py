"""Tiny causal LM with ALiBi attention biases and tied input/output embeddings.

The per-head slopes are computed in NumPy (float64, as in the paper's reference code) and kept
in forward (cheap). The causal mask fills with a large negative constant.
"""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def alibi_slopes(n_heads):
    start = 2.0 ** (-8.0 / n_heads)
    return np.array([start ** (i + 1) for i in range(n_heads)])


class AlibiAttention(nn.Module):
    def __init__(self, d, heads, max_len):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        pos = torch.arange(max_len)
        self.register_buffer("dist", (pos[None, :] - pos[:, None]).clamp(max=0).abs(), persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.h)
        slopes = torch.from_numpy(alibi_slopes(self.h)).to(x.device).view(-1, 1, 1)
        scores = scores - slopes * self.dist[:t, :t]
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = torch.where(causal, scores, torch.tensor(-1e9, device=x.device))
        return self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))


class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=48, heads=4, depth=2, max_len=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList()
        for _ in range(depth):
            self.layers.append(nn.ModuleDict({"ln1": nn.LayerNorm(d), "att": AlibiAttention(d, heads, max_len),
                                              "ln2": nn.LayerNorm(d), "ff": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))}))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.tie_weights()

    def tie_weights(self):
        self.head.weight = self.emb.weight

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            x = x + layer["att"](layer["ln1"](x))
            x = x + layer["ff"](layer["ln2"](x))
        return self.head(self.ln_f(x))


def corpus(n_tokens, seed):
    rng = np.random.default_rng(seed)
    trans = rng.dirichlet(np.full(64, 0.1), size=64)
    seq = [0]
    for _ in range(n_tokens - 1):
        seq.append(rng.choice(64, p=trans[seq[-1]]))
    return torch.tensor(seq)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--ctx", type=int, default=32)
    args = ap.parse_args()
    device = xm.xla_device()
    torch.manual_seed(0)
    model = TinyLM().to(device)
    model.tie_weights()  # the move to the XLA device unties them
    assert model.head.weight is model.emb.weight, "weights came untied"
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    data = corpus(20000, seed=0)
    gen = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        starts = torch.randint(0, len(data) - args.ctx - 1, (16,), generator=gen)
        chunk = torch.stack([data[s:s + args.ctx + 1] for s in starts]).to(device)
        logits = model(chunk[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print(f"tied after training: {model.head.weight is model.emb.weight}")


if __name__ == "__main__":
    main()
