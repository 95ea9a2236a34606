"""Repro (refusal): an additive causal mask made in forward and handed to a submodule, which
passes it to F.scaled_dot_product_attention: stochastic/gpu-compatible refuse (BFM081/BFM085)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Attn(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask).squeeze(1)


class LM(nn.Module):
    def __init__(self, vocab=10, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Attn(d) for _ in range(2))
        self.out = nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.size(1)
        mask = torch.triu(torch.full((t, t), float("-inf"), device=idx.device), diagonal=1)
        x = self.emb(idx)
        for blk in self.blocks:
            x = x + blk(x, mask)
        return self.out(x)


device = xm.xla_device()
model = LM().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(6):
    idx = torch.randint(0, 10, (4, 8)).to(device)
    logits = model(idx)
    loss = F.cross_entropy(logits.reshape(-1, 10), idx.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.4f}")
