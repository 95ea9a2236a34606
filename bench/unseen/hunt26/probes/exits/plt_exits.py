import os
os.environ["XLA_USE_BF16"] = "1"
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
hist = []
for _ in range(3):
    x, y = torch.randn(16, 8).to(device), torch.randint(0, 2, (16,)).to(device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    hist.append(loss.detach())
fig, ax = plt.subplots(1, 3)
ax[0].plot(torch.stack(hist).cpu())
ax[1].hist(model[0].weight.detach().cpu().flatten(), bins=20)
with torch.no_grad():
    probs = model(x).softmax(-1)
ax[2].scatter(x[:, 0].cpu(), probs[:, 1].cpu())
fig.savefig("/tmp/h26_plt.png")
print("ok dtype", probs.dtype)
