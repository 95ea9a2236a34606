import torch


def batches(n, dev):
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        x = torch.randn(16, 8, generator=g)
        yield x.to(dev), x.sum(1, keepdim=True).to(dev)
