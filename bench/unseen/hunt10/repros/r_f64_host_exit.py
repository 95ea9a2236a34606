"""hunt10 G: a float64 NumPy array moved to the device and combined with the model's output leaves the device
as float64 under XLA_USE_BF16 (the logical dtype is f64; bf16 on the device); the migration's run-time cast makes
it bf16 on the device, BFM160 adds `.float()` ("where the legacy run handed the host float32"): the host gets
float32, the saved residuals change dtype."""
import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla

def load(rng):
    return rng.normal(size=(16, 3)).astype(np.float32), rng.normal(size=16)   # targets float64

device = torch_xla.device()
torch.manual_seed(0)
model = nn.Linear(3, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
rng = np.random.default_rng(0)
x_np, y_np = load(rng)
x, y = torch.from_numpy(x_np).to(device), torch.from_numpy(y_np).to(device)
loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
with torch.no_grad():
    resid = torch.from_numpy(y_np).to(device) - model(x).squeeze(1)
torch_xla.sync()
r = resid.cpu().numpy()
print("residuals on the host:", r.dtype, r[:3])
