import torch
from torch.utils.data import DataLoader, TensorDataset


def synthetic_series(n, length, n_classes, seed):
    """Sine bursts at a class-dependent frequency, plus noise. x: (n, 1, length) float32, y: int64."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, n_classes, (n,), generator=g)
    t = torch.linspace(0, 1, length)
    freq = 2.0 + 3.0 * y.float()
    phase = torch.rand(n, generator=g) * 6.28
    x = torch.sin(freq[:, None] * 6.28 * t[None, :] + phase[:, None])
    x = x + 0.3 * torch.randn(n, length, generator=g)
    return x.unsqueeze(1), y


def make_loaders(batch_size, length=64, n_classes=3):
    xtr, ytr = synthetic_series(256, length, n_classes, seed=0)
    xva, yva = synthetic_series(96, length, n_classes, seed=1)
    train = DataLoader(TensorDataset(xtr, ytr), batch_size=batch_size, shuffle=True, drop_last=True)
    val = DataLoader(TensorDataset(xva, yva), batch_size=batch_size)
    return train, val
