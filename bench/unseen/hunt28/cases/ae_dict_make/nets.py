"""Encoder/decoder factory for the denoising autoencoder."""
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(x)


class Tower(nn.Module):
    def __init__(self, d_in, d_out, depth=2, grad_ckpt=True):
        super().__init__()
        self.inp = nn.Linear(d_in, 32)
        self.blocks = nn.ModuleList(Block(32) for _ in range(depth))
        self.out = nn.Linear(32, d_out)
        self.grad_ckpt = grad_ckpt

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = checkpoint(blk, h, use_reentrant=False) if self.grad_ckpt and self.training else blk(h)
        return self.out(h)


def make_nets(d=24, latent=8):
    return {"enc": Tower(d, latent), "dec": Tower(latent, d)}
