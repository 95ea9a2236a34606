import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class PosModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(10, 8)
        self.lin = nn.Linear(8, 1)

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device)[:, None] / 100.0
        h = self.tok(ids) + pos.sin()
        return self.lin(h).mean()


device = torch_xla.device()
model = PosModel().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randint(0, 10, (2, 8)).to(device))
loss.backward()
xm.optimizer_step(opt)
torch_xla.sync()
print(loss.item())
