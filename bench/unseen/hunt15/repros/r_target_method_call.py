"""As r_target_is_input, but the model is called through its methods (encode/decode), never as model(x): is the
loss target cast? (vae_yamlenv: posterior/likelihood/dec)"""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _ir import ir_dtype


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 3)
        self.dec = nn.Linear(3, 8)

    def encode(self, x):
        return torch.tanh(self.enc(x))

    def decode(self, z):
        return self.dec(z)


dev = torch_xla.device()
model = AE().to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(3):
    x = (torch.rand(16, 8) > 0.5).float().to(dev)
    logits = model.decode(model.encode(x))
    loss = F.binary_cross_entropy_with_logits(logits, x)
    opt.zero_grad()
    loss.backward()
    print("loss IR dtype", ir_dtype(loss))
    opt.step()
    torch_xla.sync()
    print("step", step, "loss", loss.item())
