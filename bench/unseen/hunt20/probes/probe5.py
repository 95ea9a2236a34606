import os
os.environ["XLA_DOWNCAST_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3)).to(device)
model.eval()
x = torch.randn(100, 4, device=device)
y = torch.randint(0, 3, (100,), device=device)
with torch.no_grad():
    logits = model(x)
    p = F.softmax(logits.double(), -1)
    conf, pred = p.max(-1)
    nll = -torch.log(p.gather(1, y[:, None])).mean()
    edges = torch.linspace(0, 1, 11, device=device, dtype=torch.float64)
    which = torch.bucketize(conf, edges)
    ece = torch.zeros((), dtype=torch.float64, device=device)
    for b in range(1, 11):
        m = which == b
        if m.any():
            ece += m.double().mean() * (conf[m].mean() - (pred[m] == y[m]).double().mean()).abs()
    xm.mark_step()
print("nll", nll.item(), "ece", ece.item(), p.dtype)
np.save("p.npy", p.cpu().numpy())
print(np.load("p.npy").dtype)
