"""A forward that validates its input dtype (`x.dtype != torch.float32` -> TypeError). Under the
switch a device tensor reports float32, so the guard passed; after the model and input cast it sees
bfloat16 and raises. The migration says nothing about the comparison."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Guarded(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        if x.dtype != torch.float32:
            raise TypeError(f"expects float32 features, got {x.dtype}")
        return self.fc(x)


device = xm.xla_device()
torch.manual_seed(0)
model = Guarded().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8).to(device)
    loss = F.mse_loss(model(x).squeeze(-1), x.sum(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
