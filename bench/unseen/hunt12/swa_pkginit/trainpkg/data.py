import torch
from torch.utils.data import DataLoader, TensorDataset


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(4, 16, generator=g) * 1.5
    y = torch.randint(0, 4, (n,), generator=g)
    x = centers[y] + torch.randn(n, 16, generator=g)
    return x, y


def loaders(batch=64):
    xtr, ytr = synthetic(1024, 0)
    xva, yva = synthetic(256, 1)
    train = DataLoader(TensorDataset(xtr, ytr), batch_size=batch, shuffle=True, drop_last=True)
    val = DataLoader(TensorDataset(xva, yva), batch_size=128)
    return train, val
