import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class SmoothCE(nn.Module):
    def __init__(self, smoothing=0.1):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits, target):
        soft = torch.full_like(logits, self.smoothing / (logits.size(-1) - 1))
        soft.scatter_(1, target[:, None], 1.0 - self.smoothing)
        return -(soft * F.log_softmax(logits, -1)).sum(-1).mean()


device = torch_xla.device()
model = nn.Linear(8, 4).to(device)
crit = SmoothCE()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8).to(device), torch.randint(0, 4, (16,)).to(device)
loss = crit(model(x), y)
loss.backward()
xm.optimizer_step(opt)
torch_xla.sync()
print(loss.item())
