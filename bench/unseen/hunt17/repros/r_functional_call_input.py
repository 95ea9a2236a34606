"""sam_compose: a model called through torch.func.functional_call(model, params, (x,)) is a forward pass
too; the migration casts x at `model(x)` but not in the functional_call's argument tuple."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
from torch.func import functional_call
import torch_xla

torch.manual_seed(0)
dev = torch_xla.device()
model = nn.Linear(4, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x = torch.randn(8, 4).to(dev)
    loss = model(x).pow(2).mean()
    params = {k: v.detach() * 1.01 for k, v in model.named_parameters()}
    loss2 = functional_call(model, params, (x,)).pow(2).mean()
    opt.zero_grad()
    (loss + loss2).backward()
    opt.step()
    torch_xla.sync()
    print(f"loss {loss.item():.5f} loss2 {loss2.item():.5f}")
