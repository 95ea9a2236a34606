"""A CNN whose classifier sizes itself (LazyLinear): a dry run fixes the shapes before the optimizer is built."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Net(nn.Module):
    def __init__(self, n_cls=5):
        super().__init__()
        self.features = nn.Sequential(nn.LazyConv2d(8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.LazyLinear(n_cls)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


device = xm.xla_device()
torch.manual_seed(0)
model = Net().to(device)
with torch.no_grad():
    model(torch.zeros(1, 3, 16, 16, device=device))  # materialise the lazy parameters
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for step in range(20):
    x = torch.randn(16, 3, 16, 16)
    y = (x.mean((1, 2, 3)) * 10).long().clamp(-2, 2) + 2
    out = model(x.to(device))
    loss = F.cross_entropy(out, y.to(device))
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)
print("DTYPES", model.fc.weight.dtype, model.features[0].weight.dtype, out.dtype, loss.dtype)
print("loss", loss.item())
