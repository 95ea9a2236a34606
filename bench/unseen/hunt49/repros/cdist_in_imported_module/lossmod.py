import torch


def chamfer(a, b):
    d = torch.cdist(a, b).pow(2)
    return d.min(dim=2).values.mean() + d.min(dim=1).values.mean()


