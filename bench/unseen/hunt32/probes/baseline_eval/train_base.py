import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
X, Y = torch.randn(128, 6), torch.randint(0, 3, (128,))


@torch.no_grad()
def evaluate(model):
    model.eval()
    logits = model(X.to(device))
    model.train()
    return (logits.argmax(1).cpu() == Y).float().mean().item(), logits.dtype


model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
print("baseline", evaluate(model))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = F.cross_entropy(model(X.to(device)), Y.to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("DTYPES", model[0].weight.dtype, evaluate(model))
