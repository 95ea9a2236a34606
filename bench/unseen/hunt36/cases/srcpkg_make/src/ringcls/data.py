import math

import torch


def ring_batch(n, n_rings, generator=None):
    """Points on noisy concentric rings; the label is the ring index."""
    label = torch.randint(0, n_rings, (n,), generator=generator)
    angle = torch.rand(n, generator=generator) * 2 * math.pi
    radius = 1.0 + label.float() + 0.15 * torch.randn(n, generator=generator)
    xy = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    return xy, label


def batches(steps, batch_size, n_rings, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        yield ring_batch(batch_size, n_rings, generator=g)
