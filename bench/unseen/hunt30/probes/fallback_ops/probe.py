import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(64, 64).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    h = model(torch.randn(8, 64).to(device))
    a = torch.fft.rfft(h).abs().mean()                                  # (a)
    b = torch.fft.fft(h).real.mean()                                    # (b)
    c = torch.quantile(h, 0.9)                                          # (c)
    d = h.stft(16, window=torch.hann_window(16, device=device), return_complex=True).abs().mean()   # (d) method form
    e = torch.linalg.svdvals(h[:8, :8]).sum()                           # (e)
    f = torch.linalg.eigvalsh(h[:8, :8] @ h[:8, :8].T).sum()            # (f)
    g = torch.linalg.inv(h[:8, :8] @ h[:8, :8].T + torch.eye(8, device=device)).trace()   # (g)
    k = torch.special.digamma(h.abs() + 1).mean()                       # (k)
    m = h.median()                                                      # (m)
    loss = a + b + c + d + e + f + g + k + m
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
    print(loss.item())
