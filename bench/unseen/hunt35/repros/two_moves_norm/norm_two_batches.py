"""Codemod gap C2: of two batches moved in one statement, only `a` (read by Norm.update) is cast; `b - mean`
computes in f32 where the switch had bf16. verify: BFM200 at line 15, origin line 25 (`b.to(device)`)."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch, torch.nn as nn, torch_xla


class Norm:
    def __init__(self, dim, device):
        self.mean = torch.zeros(dim, device=device)
    def update(self, x):
        self.mean = 0.9 * self.mean + 0.1 * x.mean(0)
    def __call__(self, x):
        return x - self.mean


torch.manual_seed(0)
device = torch_xla.device()
net = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
norm = Norm(4, device)
for step in range(4):
    a, b = torch.randn(32, 4) + 1, torch.randn(32, 4) + 1
    a, b = a.to(device), b.to(device)
    norm.update(a)
    loss = (net(norm(a)) - net(norm(b)).detach() - 0.5).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f}")
