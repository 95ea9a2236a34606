import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class TwoStep(torch.optim.Optimizer):
    """SAM's shape: the update is the inner optimizer's, called from second_step(), never step()."""

    def __init__(self, params, base, **kw):
        super().__init__(params, dict(kw))
        self.base = base(self.param_groups, **kw)

    def second_step(self):
        self.base.step()


device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = TwoStep(model.parameters(), torch.optim.SGD, lr=0.1, momentum=0.9)
for _ in range(2):
    model(torch.randn(8, 4).to(device)).pow(2).mean().backward()
    opt.second_step()
    opt.zero_grad()
torch_xla.sync()
buf = opt.base.state[model.weight]["momentum_buffer"]
print("dtype", model.weight.dtype, buf.dtype, "master", hasattr(opt, "fp32_master_weights"))
