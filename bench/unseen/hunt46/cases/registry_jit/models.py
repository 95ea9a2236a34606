"""Models are registered by name and built from a config."""
import torch.nn as nn

MODELS = {}


def register(name):
    def deco(cls):
        MODELS[name] = cls
        return cls

    return deco


def build_model(name, **kwargs):
    return MODELS[name](**kwargs)


@register("mlp")
class MLP(nn.Module):
    def __init__(self, d_in=20, hidden=32, n_classes=5):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))

    def forward(self, x):
        return self.net(x)


@register("resmlp")
class ResMLP(nn.Module):
    def __init__(self, d_in=20, hidden=32, n_classes=5):
        super().__init__()
        self.inp = nn.Linear(d_in, hidden)
        self.block = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU())
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, x):
        h = self.inp(x)
        return self.out(h + self.block(h))
