"""Trains under `XLA_USE_BF16=1` set by run.sh (the launcher), not by the script."""
import torch
import torch.nn as nn
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for step in range(12):
    x, y = torch.randn(32, 8).to(device), torch.randn(32, 1).to(device)
    loss = (net(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f}")
