"""Parametrizations used by the fine-tuning recipe."""
import torch
import torch.nn as nn
from torch.nn.utils import parametrize


class LowRankDelta(nn.Module):
    """weight -> weight + U @ V (the frozen original plus a learnt low-rank delta)."""

    def __init__(self, out_f, in_f, r=2):
        super().__init__()
        self.U = nn.Parameter(torch.zeros(out_f, r))
        self.V = nn.Parameter(torch.randn(r, in_f) * 0.1)

    def forward(self, W):
        return W + self.U @ self.V


def add_low_rank(linear: nn.Linear, r=2):
    parametrize.register_parametrization(linear, "weight", LowRankDelta(linear.out_features, linear.in_features, r))
    linear.parametrizations.weight.original.requires_grad_(False)
    return linear


def bake(model: nn.Module):
    """Fold every parametrization into a plain weight (for export)."""
    for m in model.modules():
        if parametrize.is_parametrized(m):
            for name in list(m.parametrizations.keys()):
                parametrize.remove_parametrizations(m, name, leave_parametrized=True)
    return model
