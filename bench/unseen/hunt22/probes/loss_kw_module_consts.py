import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

LABEL_SMOOTHING = 0.1
MARGIN = 0.3
device = torch_xla.device()
model = nn.Linear(4, 3).to(device)
crit = nn.SmoothL1Loss(beta=1 / 9)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
lab = torch.randint(0, 3, (8,)).to(device)
y = torch.randn(8, 3).to(device)
out = model(x)
loss = F.cross_entropy(out, lab, label_smoothing=LABEL_SMOOTHING) + crit(out, y) + F.multi_margin_loss(out, lab, margin=MARGIN)
loss.backward()
opt.step()
print(loss.item())
