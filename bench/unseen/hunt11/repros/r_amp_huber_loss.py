"""amp: `F.huber_loss(pred, y)` under torch.autocast("xla", bfloat16) with the model's bf16 output and an f32
target: the forward runs, the backward raises "Found dtype Float but expected BFloat16" (torch-xla's autocast
does not put huber_loss among its fp32 ops; mse_loss and l1_loss are measured alongside). Legacy: runs.
From lengths_cfgmodule/train_lengths.py:61-63."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for name, crit in [("mse_loss", F.mse_loss), ("l1_loss", F.l1_loss), ("smooth_l1_loss", F.smooth_l1_loss),
                   ("huber_loss", lambda p, t: F.huber_loss(p, t, delta=0.5))]:
    x, y = torch.randn(32, 6).to(device), torch.randn(32).to(device)
    pred = model(x).squeeze(-1)
    loss = crit(pred, y)
    try:
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"{name}: ran, loss {loss.item():.4f} ({loss.dtype})")
    except RuntimeError as e:
        print(f"{name}: backward raised {type(e).__name__}: {str(e).splitlines()[0]}")
