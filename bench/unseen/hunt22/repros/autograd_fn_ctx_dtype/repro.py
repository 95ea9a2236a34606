import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla


class NoisyRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        noise = torch.rand(x.shape, device=x.device) - 0.5
        ctx.save_for_backward(noise)
        return torch.round(x * scale + noise) / scale

    @staticmethod
    def backward(ctx, g):
        (noise,) = ctx.saved_tensors
        return g * (1 + 0 * noise), None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 1)

    def forward(self, x):
        h = NoisyRound.apply(self.a(x), 16.0)
        return self.b(h)


device = torch_xla.device()
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
y = torch.randn(8, 1).to(device)
loss = ((model(x) - y) ** 2).mean()
loss.backward()
opt.step()
print("loss dtype", loss.dtype)
