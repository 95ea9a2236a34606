"""Global-filter token mixer (GFNet-style) on synthetic sequences: rfft over the sequence axis, a learnt complex
filter, irfft back. Sinusoidal positions are computed at start-up and kept as a buffer."""
import math
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 20))
SEQ, DIM, NCLS = 32, 24, 4


def sinusoid_table(n, d):
    pos = torch.arange(n).unsqueeze(1).float()
    div = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class GlobalFilter(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n // 2 + 1, d, 2) * 0.02)

    def forward(self, x):
        n = x.shape[1]
        spec = torch.fft.rfft(x, dim=1, norm="ortho")
        spec = spec * torch.view_as_complex(self.w)
        return torch.fft.irfft(spec, n=n, dim=1, norm="ortho")


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, DIM)
        self.register_buffer("pe", sinusoid_table(SEQ, DIM))
        self.norm1 = nn.LayerNorm(DIM)
        self.filt = GlobalFilter(SEQ, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))
        self.head = nn.Linear(DIM, NCLS)

    def forward(self, x):
        h = self.inp(x) + self.pe
        h = h + self.filt(self.norm1(h))
        h = h + self.mlp(self.norm2(h))
        return self.head(h.mean(1))


def batch(g, n=16):
    t = torch.linspace(0, 1, SEQ)
    y = torch.randint(0, NCLS, (n,), generator=g)
    freq = (y.float() + 1.0) * 3.0
    base = torch.sin(2 * math.pi * freq[:, None] * t[None, :])
    x = torch.stack([base, torch.randn(n, SEQ, generator=g) * 0.3, t.expand(n, SEQ)], dim=-1)
    return x, y


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = Mixer().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    g = torch.Generator().manual_seed(1)
    for step in range(STEPS):
        x, y = batch(g)
        x, y = x.to(dev), y.to(dev)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    with torch.no_grad():
        x, y = batch(g, 64)
        acc = (model(x.to(dev)).argmax(-1).cpu() == y).float().mean().item()
    print(f"held-out acc {acc:.3f}")


if __name__ == "__main__":
    main()
