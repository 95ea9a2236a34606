"""hunt10 G: a float64 target made on the device (`torch.tensor(np_f64, device=)`) and passed to a loss
function of the script is not cast: the loss runs in f64 where the legacy run had bf16 (no diagnostic);
the same tensor in `torch.xlogy(t, ...)` is left f64 while its twin is wrapped: crash at the sync."""
import os
os.environ["XLA_USE_BF16"] = "1"
import re
import numpy as np
import torch
import torch.nn as nn
import torch_xla

def draw(rng):
    return rng.normal(size=(16, 4)).astype(np.float32), rng.poisson(3.0, size=16).astype(np.float64)

def poisson_nll(y, log_mu):
    return (log_mu.exp() - y * log_mu + torch.lgamma(y + 1)).mean()

device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
rng = np.random.default_rng(0)
for step in range(3):
    x_np, y_np = draw(rng)
    x, y = torch.tensor(x_np, device=device), torch.tensor(y_np, device=device)
    loss = poisson_nll(y, model(x).squeeze(1))
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print(step, "loss", round(loss.item(), 4), "on the device:", re.search(r"= (\w+)\[", [l for l in torch_xla._XLAC._get_xla_tensors_text([loss]).splitlines() if "ROOT" in l][-1]).group(1))
mu = model(x).squeeze(1).exp().detach()
dev = torch.xlogy(torch.tensor(y_np, device=device), torch.tensor(y_np, device=device) / mu)
torch_xla.sync()
print("deviance", dev.dtype, dev.mean().item())
