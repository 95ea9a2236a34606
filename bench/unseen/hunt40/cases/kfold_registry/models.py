import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, n_num, n_cat, card, emb=8, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(card, emb)
        self.body = nn.Sequential(nn.Linear(n_num + n_cat * emb, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, num, cat):
        return self.body(torch_cat(num, self.emb(cat).flatten(1))).squeeze(-1)


class ResMLP(nn.Module):
    def __init__(self, n_num, n_cat, card, emb=8, hidden=32, depth=2):
        super().__init__()
        self.emb = nn.Embedding(card, emb)
        self.inp = nn.Linear(n_num + n_cat * emb, hidden)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.SiLU())
                                    for _ in range(depth))
        self.out = nn.Linear(hidden, 1)

    def forward(self, num, cat):
        h = self.inp(torch_cat(num, self.emb(cat).flatten(1)))
        for blk in self.blocks:
            h = h + blk(h)
        return self.out(h).squeeze(-1)


def torch_cat(a, b):
    return torch.cat([a, b], dim=1)
