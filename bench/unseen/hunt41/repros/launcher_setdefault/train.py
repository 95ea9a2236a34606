import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
model = nn.Linear(4, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 4).to(dev)
for _ in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
