import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 5)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
y = torch.randint(1, 5, (4, 6))
in_lens, tgt_lens = torch.full((4,), 20), torch.full((4,), 6)
for step in range(12):
    x = torch.randn(4, 20, 8).to(device)
    log_probs = model(x).log_softmax(-1).transpose(0, 1)
    # following BFM155 ("run it in float32 by hand, then migrate again")
    loss = F.ctc_loss(log_probs.to(torch.float32), y.to(device), in_lens, tgt_lens, zero_infinity=True)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.4f}")
