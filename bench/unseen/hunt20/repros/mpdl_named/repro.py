import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import torch_xla
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
ds = TensorDataset(torch.randn(64, 6), torch.randn(64, 1))
loader = pl.MpDeviceLoader(DataLoader(ds, batch_size=16), device)
model = nn.Linear(6, 1).to(device)
sq = torch.zeros((), device=device)
with torch.no_grad():
    for xb, yb in loader:
        err = model(xb) - yb
        sq += err.pow(2).sum()
print(err.dtype)
print(sq.item())
