"""node_rk4: `torch.tensor(..., dtype=torch.float32, device=dev)` was bf16 on the device under XLA_USE_BF16
(explicit float32 included); the migration leaves it f32 and reports nothing ("0 left to do by hand")."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
from _ir import ir_dtype

torch.manual_seed(0)
dev = torch_xla.device()
model = nn.Linear(3, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ts = torch.tensor([0.0, 0.1, 0.35, 0.7], dtype=torch.float32, device=dev)
x = torch.randn(16, 3).to(dev)
for i in range(ts.shape[0] - 1):
    h = ts[i + 1] - ts[i]
    out = model(x + h / 2)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("ts IR dtype", ir_dtype(ts), "| h IR dtype", ir_dtype(h))
    torch_xla.sync()
    print(f"loss {loss.item():.6f}")
