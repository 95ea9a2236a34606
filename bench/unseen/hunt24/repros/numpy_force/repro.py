import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 8).to(device), torch.randint(0, 4, (64,)).to(device)
for _ in range(3):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
with torch.no_grad():
    probs = model(x).softmax(-1)
np.save("probs.npy", probs.numpy(force=True))
print("saved", np.load("probs.npy").dtype)
print("loss dtype", loss.dtype)
