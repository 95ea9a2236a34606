import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class StepLinear(nn.Module):
    def __init__(self, lin):
        super().__init__()
        self.lin = lin
        self.step = nn.Parameter(torch.ones(lin.out_features, device=lin.weight.device))

    def forward(self, x):
        return self.lin(x) * self.step


def inject(model):
    for _, mod in list(model.named_modules()):
        for name, child in list(mod.named_children()):
            if isinstance(child, nn.Linear):
                setattr(mod, name, StepLinear(child))
    return [p for n, p in model.named_parameters() if n.endswith("step")]


torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(int(os.environ.get("STEPS", "3"))):
    if step == 1:
        opt.add_param_group({"params": inject(model)})
    x = torch.randn(4, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.5f}")
print("dtype", model[0].step.dtype)
