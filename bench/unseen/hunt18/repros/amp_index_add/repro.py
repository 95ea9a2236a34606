import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class Agg(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, dst, ew):
        h = self.lin(x)
        agg = torch.zeros_like(h).index_add_(0, dst, h * ew[:, None])
        return agg.sum()


device = torch_xla.device()
model = Agg().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(6, 4).to(device)
dst = torch.tensor([0, 0, 1, 2, 2, 3]).to(device)
ew = torch.rand(6).to(device)
loss = model(x, dst, ew)
loss.backward()
xm.optimizer_step(opt)
torch_xla.sync()
print(loss.item())
