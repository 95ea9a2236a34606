import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Lit(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, batch):
        x, y = batch
        return F.mse_loss(self(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


device = torch_xla.device()
lit = Lit().to(device)
opt = lit.configure_optimizers()
for step in range(3):
    loss = lit.training_step((torch.randn(8, 4).to(device), torch.randn(8).to(device)))
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    torch_xla.sync()
print(loss.item())
