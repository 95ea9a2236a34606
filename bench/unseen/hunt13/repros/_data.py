"""Data for the repros, from a module of its own (the tool cannot tell its dtype, as with a project's data module)."""
import torch


def features(n, d):
    return torch.randn(n, d)
