"""Input pipeline: a host DataLoader, a device prefetcher and an infinite stream."""
import itertools

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(n=256, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    sig = (rng.standard_normal((n, 2, 24)).cumsum(-1) / 5.0).astype(np.float32)
    target = sig[:, 0, -4:].mean(-1) - sig[:, 1, -4:].mean(-1)
    ds = TensorDataset(torch.from_numpy(sig), torch.from_numpy(target))
    return DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True,
                      generator=torch.Generator().manual_seed(seed))


class DevicePrefetcher:
    """Wraps a loader and hands out batches already on the device."""

    def __init__(self, loader, device):
        self.loader = loader
        self.device = device

    def __iter__(self):
        self._it = iter(self.loader)
        self._next = self._load()
        return self

    def _load(self):
        try:
            xb, yb = next(self._it)
        except StopIteration:
            return None
        return xb.to(self.device, non_blocking=True), yb.to(self.device, non_blocking=True)

    def __next__(self):
        if self._next is None:
            raise StopIteration
        cur, self._next = self._next, self._load()
        return cur


def forever(iterable):
    while True:
        yield from iterable


def take(iterable, n):
    return itertools.islice(forever(iterable), n)
