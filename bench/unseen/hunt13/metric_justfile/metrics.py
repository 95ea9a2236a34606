"""Streaming metrics kept on the device: the running sums are registered buffers, so `.to(device)`
moves them and `state_dict()` checkpoints them; `compute()` is the only host sync."""
import torch
import torch.nn as nn


class MeanEuclideanError(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(()))
        self.register_buffer("count", torch.zeros(()))

    @torch.no_grad()
    def update(self, pred, target):
        d = (pred - target).pow(2).sum(-1).sqrt()
        self.total += d.sum()
        self.count += d.numel()

    def compute(self):
        return (self.total / self.count.clamp(min=1)).item()

    def reset(self):
        self.total.zero_()
        self.count.zero_()


class PCK(nn.Module):
    """Percentage of correct keypoints: predicted within `threshold` (image fraction) of the truth."""

    def __init__(self, threshold=0.05):
        super().__init__()
        self.register_buffer("threshold", torch.tensor(threshold))
        self.register_buffer("hits", torch.zeros(()))
        self.register_buffer("seen", torch.zeros(()))

    @torch.no_grad()
    def update(self, pred, target):
        d = (pred - target).pow(2).sum(-1).sqrt()
        self.hits += (d < self.threshold).sum()
        self.seen += d.numel()

    def compute(self):
        return (self.hits / self.seen.clamp(min=1)).item()

    def reset(self):
        self.hits.zero_()
        self.seen.zero_()
