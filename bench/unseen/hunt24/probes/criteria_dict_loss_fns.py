import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class TwoHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(8, 32), nn.ReLU())
        self.heads = nn.ModuleDict({"cls": nn.Linear(32, 3), "reg": nn.Linear(32, 2)})

    def forward(self, x):
        h = self.trunk(x)
        return {k: head(h) for k, head in self.heads.items()}


device = torch_xla.device()
model = TwoHead().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fns = {"cls": nn.CrossEntropyLoss(), "reg": nn.MSELoss()}
weights = {"cls": 1.0, "reg": 0.5}
for _ in range(3):
    x = torch.randn(16, 8)
    tgt = {"cls": torch.randint(0, 3, (16,)), "reg": torch.randn(16, 2)}
    x = x.to(device)
    tgt = {k: v.to(device) for k, v in tgt.items()}
    out = model(x)
    losses = {k: loss_fns[k](out[k], tgt[k]) for k in out}
    loss = sum(weights[k] * v for k, v in losses.items())
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
print("reg loss dtype", losses["reg"].dtype)
print(loss.item())
