import torch
import torch.nn as nn


class Regressor(nn.Module):
    def __init__(self, d_in=8, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def dataset(n, d_in=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    y = x[:, 0] * 2.0 - x[:, 1] ** 2 + 0.1 * torch.randn(n, generator=g)
    return x, y
