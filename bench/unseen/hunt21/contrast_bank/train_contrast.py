"""Two-view contrastive encoder with a learned temperature and a Python-list memory of past key embeddings."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = 10
BANK = 4
DIM = 16


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(24, 48), nn.GELU(), nn.Linear(48, DIM))
        self.log_tau = nn.Parameter(torch.tensor(np.log(0.2), dtype=torch.float32))

    def forward(self, x):
        return F.normalize(self.body(x), dim=-1)


def views(g, n):
    base = torch.randn(n, 24, generator=g)
    a = base + 0.1 * torch.randn(n, 24, generator=g)
    b = base * (1.0 + 0.05 * torch.randn(n, 1, generator=g))
    return a, b


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    dev = xm.xla_device()
    enc = Encoder().to(dev)
    opt = torch.optim.AdamW(enc.parameters(), lr=3e-3, weight_decay=0.01)
    bank = []  # past key batches, detached, on the device
    for step in range(STEPS):
        a, b = views(g, 32)
        a, b = a.to(dev), b.to(dev)
        q = enc(a)
        k = enc(b)
        negs = torch.cat(bank, dim=0) if bank else torch.zeros(0, DIM, device=dev)
        tau = enc.log_tau.exp().clamp(min=0.05)
        pos = (q * k).sum(-1, keepdim=True)
        neg = q @ negs.t()
        logits = torch.cat([pos, neg], dim=1) / tau
        target = torch.zeros(q.size(0), dtype=torch.long, device=dev)
        loss = F.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        bank.append(k.detach())
        if len(bank) > BANK:
            bank.pop(0)
        if step % 3 == 0:
            print(f"step {step} loss {loss.item():.4f} tau {tau.item():.4f}")
    # alignment score on held-out pairs, handed to numpy
    with torch.no_grad():
        a, b = views(g, 64)
        sim = (enc(a.to(dev)) * enc(b.to(dev))).sum(-1)
        scores = sim.cpu().numpy()
        bank_norms = torch.stack([kb.norm(dim=-1).mean() for kb in bank]).cpu()
    print("mean alignment", float(scores.mean()), scores.dtype, bank_norms.dtype)


if __name__ == "__main__":
    main()
