import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()


class SignMomentum(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, beta=0.9):
        super().__init__(params, dict(lr=lr, beta=beta))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if "m" not in st:
                    st["m"] = torch.zeros_like(p).float()
                st["m"].mul_(group["beta"]).add_(p.grad, alpha=1 - group["beta"])
                p.add_(st["m"].sign(), alpha=-group["lr"])


model = nn.Linear(8, 2).to(device)
opt = SignMomentum(model.parameters())
for _ in range(3):
    x, y = torch.randn(16, 8).to(device), torch.randn(16, 2).to(device)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("state dtype", next(iter(opt.state.values()))["m"].dtype)
