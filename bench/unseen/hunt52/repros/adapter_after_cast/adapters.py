import torch
import torch.nn as nn


class Adapter(nn.Module):
    def __init__(self, base, r=2):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(r, base.in_features, device=base.weight.device) * 0.1)
        self.B = nn.Parameter(torch.zeros(base.out_features, r, device=base.weight.device))

    def forward(self, x):
        return self.base(x) + x @ self.A.t() @ self.B.t()


def add_adapters(model):
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, Adapter(child))
    return model
