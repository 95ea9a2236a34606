"""moco_spawn amp, minimal: features made under autocast written into an FP32 buffer by index assignment."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.register_buffer("queue", torch.zeros(16, 4))

    def forward(self, x):
        k = self.fc(x)
        self.queue[torch.arange(4, device=x.device)] = k.detach()
        return (k @ self.queue.t()).sum()


dev = torch_xla.device()
model = Enc().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = model(torch.randn(4, 8).to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("step", step, "loss", loss.item())
print("queue dtype", model.queue.dtype)
