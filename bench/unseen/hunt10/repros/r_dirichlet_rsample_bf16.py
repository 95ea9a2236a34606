"""hunt10 G: reparameterised Gamma/Beta/Dirichlet samples (a Dirichlet-VAE-style latent). Under the switch the
concentrations said f32 and sampling ran; after the model cast they are real bf16 and torch-xla's CPU fallback has
no bf16 kernel ("dirichlet" / "gamma_cpu" not implemented for 'BFloat16'). Same family: torch.special.ndtri, pdist
backward (repros/probe_ops_bf16_grad.py)."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.distributions import Dirichlet

device = torch_xla.device()
torch.manual_seed(0)
enc = nn.Linear(10, 4).to(device)
dec = nn.Linear(4, 10).to(device)
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
x = torch.rand(16, 10).to(device)
for step in range(3):
    alpha = F.softplus(enc(x)) + 0.1
    z = Dirichlet(alpha).rsample()
    loss = F.mse_loss(dec(z), x)
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print(step, round(loss.item(), 4))
