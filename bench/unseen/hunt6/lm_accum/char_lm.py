"""Character-level Transformer LM: inverse-sqrt warmup scheduler, gradient accumulation."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

TEXT = ("the quick brown fox jumps over the lazy dog. " * 40
        + "pack my box with five dozen liquor jugs. " * 40)


class InverseSqrtWarmup:
    """lr = base * min(step / warmup, sqrt(warmup / step)); stepped once per optimizer step."""

    def __init__(self, optimizer, base_lr, warmup):
        self.optimizer, self.base_lr, self.warmup = optimizer, base_lr, warmup
        self.num_updates = 0
        self._set(self.lr_at(1))

    def lr_at(self, n):
        return self.base_lr * min(n / self.warmup, math.sqrt(self.warmup / n))

    def _set(self, lr):
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def step(self):
        self.num_updates += 1
        self._set(self.lr_at(self.num_updates + 1))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class CharLM(nn.Module):
    def __init__(self, vocab, d=64, heads=4, layers=2, ctx=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.size(1)
        mask = torch.triu(torch.full((t, t), float("-inf"), device=idx.device), diagonal=1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x, mask)
        return self.out(self.ln(x))


def main():
    torch.manual_seed(0)
    chars = sorted(set(TEXT))
    data = torch.tensor([chars.index(c) for c in TEXT])
    device = torch_xla.device()
    model = CharLM(len(chars)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), weight_decay=0.01)
    sched = InverseSqrtWarmup(opt, base_lr=3e-3, warmup=4)
    accum, micro, ctx = 4, 8, 32
    for step in range(12):
        opt.zero_grad()
        running = torch.zeros((), device=device)
        for _ in range(accum):
            starts = torch.randint(0, len(data) - ctx - 1, (micro,))
            xb = torch.stack([data[s:s + ctx] for s in starts]).to(device)
            yb = torch.stack([data[s + 1:s + ctx + 1] for s in starts]).to(device)
            logits = model(xb)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), yb.reshape(-1)) / accum
            loss.backward()
            running += loss.detach()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        torch_xla.sync()
        print(f"step {step} loss {running.item():.4f} lr {opt.param_groups[0]['lr']:.2e}")


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
