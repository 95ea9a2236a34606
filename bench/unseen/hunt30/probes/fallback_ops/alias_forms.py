import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
from torch.fft import rfft
import torch.fft as tfft

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(64, 64).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    h = model(torch.randn(8, 64).to(device))
    a = rfft(h).abs().mean()                                            # (a) from torch.fft import rfft
    b = tfft.rfft(h).abs().mean()                                       # (b) import torch.fft as tfft
    c = h.quantile(0.9)                                                 # (c) Tensor.quantile method form
    d = torch.fft.irfft(torch.fft.rfft(h.float())).to(h.dtype).mean()   # (d) the advised by-hand form
    loss = a + b + c + d
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
    print(loss.item())
