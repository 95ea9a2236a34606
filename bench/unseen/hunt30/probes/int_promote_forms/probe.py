import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    x, y = torch.randn(16, 4).to(device), torch.randint(0, 4, (16,)).to(device)
    out = model(x)
    ys, xs = torch.meshgrid(torch.arange(4, device=device), torch.arange(4, device=device), indexing="ij")
    a = (xs + 0.5) * 8                                                      # (a) meshgrid output + float
    b = (torch.arange(4, device=device) + 0.5) / 4                          # (b) arange + float, / int
    c = (out.argmax(1) == y).sum() / y.numel()                              # (c) int / int (true division)
    d = torch.bincount(y, minlength=4) / len(y)                             # (d) bincount / int
    e = torch.where(y > 1, 1.0, 0.0)                                        # (e) where with Python floats
    f = F.one_hot(y, 4) * 0.9 + 0.025                                       # (f) one_hot * float
    g = y.cumsum(0) / (torch.arange(16, device=device) + 1)                 # (g) running mean, int / int
    loss = F.mse_loss(out, f) + (out.mean(0) * d * b).sum() + (out[:, 0] * e * g).mean() + c * 0
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
    print(*(t.dtype for t in (a, b, c, d, e, f, g, loss)))
