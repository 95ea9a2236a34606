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
import argparse; args = argparse.Namespace(ls=0.1, w=2.0)
W = 2.0 ** 0.5
loss = F.cross_entropy(out, lab, label_smoothing=args.ls) + F.mse_loss(out, y) * W + F.smooth_l1_loss(out, y, 1.0 / 3)
loss.backward()
opt.step()
print(loss.item())
