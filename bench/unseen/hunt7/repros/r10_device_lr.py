"""Gap (stochastic): a hyperparameter held as a device tensor inside the file's own optimizer class
(`self.lr = torch.tensor(lr, device=device)`, so a schedule can change it without recompiling) stays
f32; under the switch it was bf16. `1 - self.lr * wd` then computes in f32 on the device (verify's
trace: BFM201). Numerically negligible (a 0-dim scalar), but unreported."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class SignSGD(torch.optim.Optimizer):
    def __init__(self, params, lr, weight_decay, device):
        super().__init__(params, dict(weight_decay=weight_decay))
        self.lr = torch.tensor(lr, device=device)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.mul_(1 - self.lr * group["weight_decay"])
                p.sub_(self.lr * p.grad.sign())


dev = torch_xla.device()
model = nn.Linear(8, 1).to(dev)
opt = SignSGD(model.parameters(), lr=1e-3, weight_decay=0.1, device=dev)
for step in range(3):
    loss = model(torch.randn(16, 8).to(dev)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(step, loss.item())
