"""hunt10 G1: BFM154 puts dtype=torch.bfloat16 into torch.linspace(..., device=device); on torch-xla 2.9
sin/exp/... of that tensor come out float32 (a linspace quirk), so the bf16 model meets f32: crash at sync."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
grid = torch.linspace(-3, 3, 32, device=device).unsqueeze(1)
target = torch.sin(grid)
for step in range(3):
    loss = ((model(grid) - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(step, loss.item())
