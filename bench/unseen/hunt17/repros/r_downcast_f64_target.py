"""ts_downcast: under XLA_DOWNCAST_BF16 a float64 loss target is f32 on the device (f64 -> f32), and
`F.mse_loss(pred.double(), yb)` computes in f32. The stochastic migration sends the target through
floating_to_bf16(): the target becomes bf16, a precision the legacy run never gave it."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _ir import ir_dtype

torch.manual_seed(0)
dev = torch_xla.device()
model = nn.Linear(8, 4).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: same weights every step, only the target differs
rng = np.random.default_rng(0)
x = torch.from_numpy(rng.standard_normal((64, 8))).float().to(dev)
yb = torch.from_numpy(rng.standard_normal((64, 4)) * 3.0 + 100.0).to(dev)  # float64 target
pred = model(x)
loss = F.mse_loss(pred.double(), yb)
opt.zero_grad()
loss.backward()
opt.step()
print("target IR dtype", ir_dtype(yb), "| loss IR dtype", ir_dtype(loss))
torch_xla.sync()
print(f"loss {loss.item():.6f}")
