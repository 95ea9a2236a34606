"""Model zoo: build_model(name=..., **kwargs) returns a fresh nn.Module."""

import torch.nn as nn


class ResidualMLP(nn.Module):
    def __init__(self, d_in, hidden, d_out, depth=2, dropout=0.0):
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(dropout))
            for _ in range(depth)
        )
        self.head = nn.Linear(hidden, d_out)

    def forward(self, x):
        h = self.stem(x)
        for blk in self.blocks:
            h = h + blk(h)
        return self.head(h)


class Linear(nn.Module):
    def __init__(self, d_in, d_out, **_):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        return self.fc(x)


_ZOO = {"resmlp": ResidualMLP, "linear": Linear}


def build_model(name, **kwargs):
    try:
        cls = _ZOO[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; have {sorted(_ZOO)}") from None
    return cls(**kwargs)
