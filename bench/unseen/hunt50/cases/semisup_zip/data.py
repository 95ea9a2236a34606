"""Synthetic labelled / unlabelled loaders and a generator of device batches."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def loaders(n_lab, n_unl, dim=16, n_classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(n_classes, dim, generator=g) * 2.0
    def sample(n):
        y = torch.randint(0, n_classes, (n,), generator=g)
        return centers[y] + torch.randn(n, dim, generator=g), y
    xl, yl = sample(n_lab)
    xu, yu = sample(n_unl)
    lab = DataLoader(TensorDataset(xl, yl), batch_size=8, shuffle=False)
    unl = DataLoader(TensorDataset(xu, torch.full_like(yu, -1)), batch_size=24, shuffle=False)
    return lab, unl


def device_batches(loader, dev):
    for x, y in loader:
        yield x.to(dev), y.to(dev)
