import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Brier:
    def __init__(self):
        self.terms = []

    def update(self, logits, y):
        self.terms.append(((torch.sigmoid(logits) - y) ** 2).mean())


device = xm.xla_device()
model = nn.Linear(3, 1).to(device)
metric = Brier()
x = torch.randn(16, 3)
y = (x.sum(1) > 0).float()
metric.update(model(x.to(device)).squeeze(-1), y.to(device))
print("dtype", model.weight.dtype, metric.terms[0].dtype)
