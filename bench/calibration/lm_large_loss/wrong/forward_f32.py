"""A decoder-only language model over a 3,000-token vocabulary: its loss starts near
ln(3000) = 8.0, where bf16 numbers are 0.0625 apart, so over a few steps the bf16 loss looks
flat while the FP32 one falls. The causal mask and the sinusoidal positions are made in
forward, from the activations' device."""

import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import argparse
import itertools
import math

import torch
import torch.nn as nn
import torch_xla

VOCAB = 3000


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        mask = torch.full((t, t), float("-inf"), device=x.device).triu(1)
        attn = torch.softmax(scores + mask, dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, VOCAB, bias=False)

    def positions(self, t, dim, device):
        pos = torch.arange(t, device=device).float().unsqueeze(1)
        freq = torch.exp(torch.arange(0, dim, 2, device=device).float() * (-math.log(10000.0) / dim))
        table = torch.zeros(t, dim, device=device)
        table[:, 0::2] = torch.sin(pos * freq)
        table[:, 1::2] = torch.cos(pos * freq)
        return table

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.positions(tokens.shape[1], h.shape[2], tokens.device)
        for block in self.blocks:
            h = block(h)
        return self.out(self.norm(h))


def token_batches(batch, length, gen):
    """Sequences that mostly follow t -> 7t + 3 (mod VOCAB), with one token in five random."""
    while True:
        seq = torch.empty(batch, length + 1, dtype=torch.long)
        seq[:, 0] = torch.randint(0, VOCAB, (batch,), generator=gen)
        for i in range(length):
            follow = (seq[:, i] * 7 + 3) % VOCAB
            noise = torch.randint(0, VOCAB, (batch,), generator=gen)
            seq[:, i + 1] = torch.where(torch.rand(batch, generator=gen) < 0.8, follow, noise)
        yield seq[:, :-1], seq[:, 1:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--overfit-one-batch", action="store_true", help="a smoke test: the same batch every step")
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = TinyLM().to(device)
    model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    batches = token_batches(args.batch_size, args.seq_len, torch.Generator().manual_seed(3))
    if args.overfit_one_batch:
        batches = itertools.repeat(next(batches))
    for _ in range(args.steps):
        inputs, labels = next(batches)
        inputs, labels = inputs.to(device), labels.to(device)
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), labels.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch_xla.sync()


if __name__ == "__main__":
    main()
