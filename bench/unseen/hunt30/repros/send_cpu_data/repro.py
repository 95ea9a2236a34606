import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(12):
    batch = {"x": torch.randn(16, 8), "y": torch.randn(16, 1), "w": torch.rand(16, 1)}
    batch = xm.send_cpu_data_to_device(batch, device)
    pred = model(batch["x"])
    loss = (batch["w"] * (pred - batch["y"]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(batch["w"].dtype, loss.dtype)
    print(f"{loss.item():.4f}")
