import os, math
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

BETA = 1 / 9
device = torch_xla.device()
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
y = torch.randn(8, 2).to(device)
lab = torch.randint(0, 2, (8,)).to(device)
out = model(x)
eps = 0.05
loss = F.smooth_l1_loss(out, y, beta=BETA) + F.huber_loss(out, y, delta=math.sqrt(2.0)) + F.cross_entropy(out, lab, label_smoothing=eps * 2) + F.smooth_l1_loss(out, y, beta=-(0.5))
loss.backward()
opt.step()
print(loss.item())
