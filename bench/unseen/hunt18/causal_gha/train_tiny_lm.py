"""A tiny causal LM with hand-written attention and a Polyak-averaged copy used for evaluation."""
import argparse
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

VOCAB, DIM, HEADS, CTX = 97, 64, 4, 24


class CausalBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.ln1 = nn.LayerNorm(DIM)
        self.ln2 = nn.LayerNorm(DIM)
        self.ff = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, HEADS, DIM // HEADS).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(DIM // HEADS)
        # additive causal mask: 0 on and below the diagonal, -inf above
        mask = torch.triu(torch.full((t, t), float("-inf"), device=x.device), diagonal=1)
        att = torch.softmax(scores + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, DIM)
        x = x + self.proj(y)
        return x + self.ff(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([CausalBlock(), CausalBlock()])
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device)[:, None] / (10000 ** (torch.arange(0, DIM, 2, device=ids.device) / DIM))
        pe = torch.cat([pos.sin(), pos.cos()], dim=-1)
        h = self.tok(ids) + pe
        for blk in self.blocks:
            h = blk(h)
        return self.head(h)


@torch.no_grad()
def polyak(target, online, tau=0.05):
    for pt, po in zip(target.parameters(), online.parameters()):
        pt.mul_(1 - tau).add_(po, alpha=tau)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = TinyLM().to(device)
    avg = copy.deepcopy(model).eval()
    for p in avg.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    data = torch.randint(0, VOCAB, (64, CTX + 1))
    for step in range(args.steps):
        idx = torch.randint(0, 64, (8,))
        batch = data[idx].to(device)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        polyak(avg, model)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.3f}")
    with torch.no_grad():
        ev = data[:16].to(device)
        ev_loss = F.cross_entropy(avg(ev[:, :-1]).reshape(-1, VOCAB), ev[:, 1:].reshape(-1))
    print("averaged-model eval loss", ev_loss.item())


if __name__ == "__main__":
    main()
