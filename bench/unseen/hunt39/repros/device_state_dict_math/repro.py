"""ckpt_export: a state dict loaded from disk is moved to the device tensor by tensor and edited there."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

dev = torch_xla.device()
torch.manual_seed(0)
torch.save(nn.Linear(8, 4).state_dict(), "src.pt")

sd = {k: v.to(dev) for k, v in torch.load("src.pt").items()}
scale = torch.rand(8).to(dev)
sd["weight"] = sd["weight"] * scale
sd["bias"] = sd["bias"] - sd["weight"].sum(1)
torch_xla.sync()

net = nn.Linear(8, 4).to(dev)
net.load_state_dict(sd)
out = net(torch.randn(2, 8).to(dev))
torch_xla.sync()
print(out.sum().item())
print("dtype", sd["weight"].dtype, net.weight.dtype)
