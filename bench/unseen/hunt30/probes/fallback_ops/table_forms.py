import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.distributions import Beta, Gamma

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(16, 16).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    h = model(torch.rand(8, 16).to(device)).sigmoid() + 0.1
    a = F.pdist(h).mean()                                                   # (a)
    b = torch.linalg.lstsq(h[:, :8] @ h[:, :8].T + torch.eye(8, device=device), h[:, :2]).solution.mean()   # (b)
    c = torch.linalg.slogdet(h[:, :8] @ h[:, :8].T + torch.eye(8, device=device)).logabsdet                 # (c)
    d = Gamma(h, torch.ones_like(h)).rsample().mean()                       # (d) imported name
    e = Beta(h, h).rsample().mean()                                         # (e) imported name
    f = torch.fft.ifft(h).real.mean()                                       # (f)
    g = torch.fft.fft2(h).abs().mean()                                      # (g)
    k = torch.fft.rfftn(h).abs().mean()                                     # (k)
    m = torch.distributions.Dirichlet(h).rsample().mean()                   # (m)
    n = torch.logdet(h[:, :8] @ h[:, :8].T + torch.eye(8, device=device))    # (n)
    loss = a + b + c + d + e + f + g + k + m + n
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
    print(loss.item())
