"""Codemod gap: a model used on the HOST (f32, untouched by the switch) before it is moved to the
device. Stochastic mode casts the host forward's input to bf16 while the model is still f32 on the
CPU: the migrated script crashes at line 15 ("mat1 and mat2 must have the same dtype")."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
net = nn.Linear(6, 3).eval()
x = torch.randn(16, 6)
with torch.no_grad():
    labels = net(x).argmax(dim=1)  # host forward: float32 under the switch as well
net.to(device)
with torch.no_grad():
    logits = net(x.to(device))
torch_xla.sync()
print("labels", labels.tolist()[:5], "logits", logits.dtype, logits.cpu().numpy().dtype)
