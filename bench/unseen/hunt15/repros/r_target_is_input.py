"""An autoencoder-like step: the model's input is the loss target, the loss in a separate statement (vae_yamlenv)."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

dev = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 3), nn.Tanh(), nn.Linear(3, 8)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(3):
    x = (torch.rand(16, 8) > 0.5).float().to(dev)
    logits = model(x)
    loss = F.binary_cross_entropy_with_logits(logits, x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("step", step, "loss", loss.item())
