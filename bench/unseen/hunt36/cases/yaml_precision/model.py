import torch
import torch.nn as nn


class ResidualMLP(nn.Module):
    def __init__(self, in_dim, hidden, depth):
        super().__init__()
        self.inp = nn.Linear(in_dim, hidden)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU()) for _ in range(depth)
        )
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = h + blk(h)
        return self.out(h).squeeze(-1)
