import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4).to(device)
y = torch.randint(0, 3, (16,)).to(device)
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
xm.optimizer_step(opt)
pred = model(x).argmax(-1)
cm = torch.bincount(y * 3 + pred, minlength=9).reshape(3, 3)
hits = cm[:, 1].float()
score = hits.sum() / 16
torch_xla.sync()
print(score.item())
