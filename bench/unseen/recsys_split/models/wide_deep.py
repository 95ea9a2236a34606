import torch.nn as nn

from .towers import DeepTower, WideTower


class WideAndDeep(nn.Module):
    def __init__(self, cardinalities, n_dense: int, emb_dim: int, cross_buckets: int):
        super().__init__()
        self.cross_buckets = cross_buckets
        self.wide = WideTower(n_dense, cross_buckets)
        self.deep = DeepTower(cardinalities, emb_dim, n_dense)

    def forward(self, categorical, dense):
        cross_ids = (categorical[:, 0] * 31 + categorical[:, 1]) % self.cross_buckets
        return (self.wide(dense, cross_ids) + self.deep(categorical, dense)).squeeze(-1)


def build_model(cfg: dict) -> WideAndDeep:
    return WideAndDeep(cfg["cardinalities"], cfg["n_dense"], cfg["emb_dim"], cfg["cross_buckets"])
