"""A deep Lipschitz-constrained critic (spectral norm) with a weight-normed head,
trained on a two-moons-like task with activation checkpointing to fit depth."""
import os

os.environ.setdefault("XLA_USE_BF16", "true")

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm, weight_norm
from torch.utils.checkpoint import checkpoint
import torch_xla

STEPS = int(os.environ.get("STEPS", "30"))
DEPTH = 6


class SNBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = spectral_norm(nn.Linear(width, width))
        self.fc2 = spectral_norm(nn.Linear(width, width))

    def forward(self, h):
        return h + 0.5 * self.fc2(F.leaky_relu(self.fc1(h), 0.1))


class Critic(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.stem = nn.Linear(2, width)
        self.blocks = nn.ModuleList(SNBlock(width) for _ in range(DEPTH))
        self.head = weight_norm(nn.Linear(width, 2))

    def forward(self, x):
        h = self.stem(x)
        for blk in self.blocks:
            h = checkpoint(blk, h, use_reentrant=False) if self.training else blk(h)
        return self.head(h)


def moons(gen, n=256):
    t = torch.rand(n, generator=gen) * 3.1416
    lab = torch.randint(0, 2, (n,), generator=gen)
    x = torch.stack([torch.cos(t), torch.sin(t)], 1)
    x = torch.where(lab[:, None] == 1, 1.0 - x + torch.tensor([0.0, 0.5]), x)
    return x + 0.1 * torch.randn(n, 2, generator=gen), lab


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)
    dev = torch_xla.device()
    critic = Critic().to(dev)
    opt = torch.optim.SGD(critic.parameters(), lr=0.05, momentum=0.9, nesterov=True)

    for step in range(STEPS):
        x, y = moons(gen)
        x, y = x.to(dev), y.to(dev)
        critic.train()
        logits = critic(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")

    critic.eval()
    with torch.no_grad():
        x, y = moons(gen, 512)
        pred = critic(x.to(dev)).argmax(-1).cpu()
        sigma = torch.stack([torch.linalg.matrix_norm(b.fc1.weight, ord=2) for b in critic.blocks])
    acc = (pred == y).float().mean().item()
    print(f"accuracy {acc:.3f} max sigma {sigma.max().item():.4f}")
    u = critic.blocks[0].fc1.parametrizations.weight[0]._u
    g = critic.head.parametrizations.weight.original0
    print("DTYPES weight", critic.stem.weight.dtype, "sn_u", u.dtype, "wn_g", g.dtype, "loss", loss.dtype,
          "sigma host", sigma.cpu().dtype)


if __name__ == "__main__":
    main()
