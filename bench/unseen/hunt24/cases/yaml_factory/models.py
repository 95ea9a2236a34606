"""Small model zoo: factories registered by name, each returns an nn.Sequential."""
import torch.nn as nn
from torch.nn.utils import parametrizations

_ACT = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU}
_REGISTRY = {}


def register(name):
    def deco(fn):
        _REGISTRY[name] = fn
        return fn
    return deco


def mlp_block(d_in, d_out, act="gelu", dropout=0.0, weight_norm=False):
    lin = nn.Linear(d_in, d_out)
    if weight_norm:
        lin = parametrizations.weight_norm(lin)
    return nn.Sequential(lin, nn.LayerNorm(d_out), _ACT[act](), nn.Dropout(dropout))


@register("mlp")
def quantile_mlp(in_dim, hidden, quantiles, act="gelu", dropout=0.0, weight_norm=False, **_):
    dims = [in_dim, *hidden]
    blocks = [mlp_block(a, b, act, dropout, weight_norm) for a, b in zip(dims[:-1], dims[1:])]
    return nn.Sequential(*blocks, nn.Linear(dims[-1], len(quantiles)))


def build_model(cfg):
    cfg = dict(cfg)
    return _REGISTRY[cfg.pop("name")](**cfg)
