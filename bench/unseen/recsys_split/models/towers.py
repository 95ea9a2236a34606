"""The two towers of a wide & deep click-through model."""

import torch
import torch.nn as nn


class WideTower(nn.Module):
    """A linear model over the dense features and a one-weight-per-id table for the crossed feature."""

    def __init__(self, n_dense: int, cross_buckets: int):
        super().__init__()
        self.dense = nn.Linear(n_dense, 1)
        self.cross = nn.Embedding(cross_buckets, 1)

    def forward(self, dense, cross_ids):
        return self.dense(dense) + self.cross(cross_ids)


class DeepTower(nn.Module):
    """Embeddings of the categorical fields, concatenated with the dense features, then an MLP."""

    def __init__(self, cardinalities, emb_dim: int, n_dense: int, hidden=(64, 32)):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, emb_dim) for c in cardinalities])
        layers, width = [], emb_dim * len(cardinalities) + n_dense
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, categorical, dense):
        embs = [emb(categorical[:, i]) for i, emb in enumerate(self.embeddings)]
        return self.mlp(torch.cat(embs + [dense], dim=1))
