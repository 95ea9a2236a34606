import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

rng = np.random.default_rng(0)
X = rng.normal(size=(192, 8)).astype(np.float32)
Y = (X[:, 0] + 0.3 * rng.normal(size=192) > 0).astype(np.float64)      # float64 labels
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)), batch_size=16)

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for x, y in pl.MpDeviceLoader(loader, device):
    logits = model(x).squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(y.dtype, loss.dtype)
    print(f"{loss.item():.4f}")
