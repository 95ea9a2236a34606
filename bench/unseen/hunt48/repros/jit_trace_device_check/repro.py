"""torch.jit.trace of the trained model on the device: its check_trace compares outputs with .double() on the device."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for step in range(int(os.environ.get("STEPS", 3))):
    loss = nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")

model.eval()
sample = x[:2].to(dev)
traced = torch.jit.trace(model, sample)
print("traced output", traced(sample).cpu().flatten().tolist())
