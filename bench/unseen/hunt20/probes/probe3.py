import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
X = np.random.default_rng(0).normal(size=(256, 6))
Y = X.sum(1, keepdims=True) * 0.3
ds = TensorDataset(torch.from_numpy(X), torch.from_numpy(Y))
loader = pl.MpDeviceLoader(DataLoader(ds, batch_size=32), device)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
model.eval()
preds, errs = [], []
abs_err = torch.zeros((), device=device)
with torch.no_grad():
    for xb, yb in loader:
        p = model(xb)
        abs_err += (p - yb).abs().sum()
        preds.append(p.cpu())
        errs.append((p - yb).pow(2).mean().cpu().numpy())
mae = abs_err / len(ds)
print("1 mae", mae.item())
print("2", np.concatenate([t.numpy() for t in preds]).dtype)
print("3", float(np.mean(errs)))
rmse = xm.mesh_reduce("rmse", float(np.sqrt(np.mean(errs))), np.mean)
print("4", rmse)
