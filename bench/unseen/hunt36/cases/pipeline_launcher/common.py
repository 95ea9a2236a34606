import torch
import torch.nn as nn


class TwoMoonsNet(nn.Module):
    def __init__(self, hidden=48):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ELU(), nn.Linear(hidden, hidden), nn.ELU(), nn.Linear(hidden, 2))

    def forward(self, x):
        return self.net(x)


def two_moons(n, noise=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(n, generator=g) * torch.pi
    label = torch.randint(0, 2, (n,), generator=g)
    x = torch.stack([torch.cos(t), torch.sin(t)], 1)
    x = torch.where(label[:, None] == 1, torch.stack([1 - torch.cos(t), 0.5 - torch.sin(t)], 1), x)
    return x + noise * torch.randn(n, 2, generator=g), label
