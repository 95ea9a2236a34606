"""A buffer registered on the model after the model is on the device (and after the optimizer is built): the
codemod's cast runs before the optimizer, so the buffer stays f32 and meets the bf16 input in the forward."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc(torch.sin(x @ self.B))


dev = torch_xla.device()
torch.manual_seed(0)
model = Net().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model.register_buffer("B", torch.randn(2, 16).to(dev))
for step in range(int(os.environ.get("STEPS", "6"))):
    x = torch.rand(32, 2).to(dev)
    loss = ((model(x).squeeze(-1) - x.sum(-1)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(step, loss.item())
