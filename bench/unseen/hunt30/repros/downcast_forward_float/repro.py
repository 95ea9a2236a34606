import os
os.environ["XLA_DOWNCAST_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(10, 4), nn.Linear(8, 1)

    def forward(self, dense, cat):
        return self.fc(torch.cat([dense.float(), self.emb(cat)], 1)).squeeze(1)   # dense arrives float64


rng = np.random.default_rng(0)
ds = torch.utils.data.TensorDataset(torch.from_numpy(rng.normal(size=(192, 4))), torch.from_numpy(rng.integers(0, 10, 192)),
                                    torch.from_numpy(rng.normal(size=192).astype(np.float32)))
device = xm.xla_device()
torch.manual_seed(0)
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for dense, cat, y in pl.MpDeviceLoader(torch.utils.data.DataLoader(ds, batch_size=16), device):
    loss = ((model(dense, cat) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.4f}")
