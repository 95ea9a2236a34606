"""amp: standardisation statistics computed in NumPy (float64) and registered as buffers, applied in
forward before the first Linear: `(x - self.mean) / self.std`. Under XLA_USE_BF16 all bf16; under the amp
migration's autocast the normalised input is float64 and meets the Linear."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

rng = np.random.default_rng(0)
X = rng.normal(3.0, 2.0, size=(512, 8)).astype(np.float32)
Y = X @ rng.normal(size=8).astype(np.float32)


class Reg(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.from_numpy(mean))
        self.register_buffer("std", torch.from_numpy(std))
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net((x - self.mean) / self.std).squeeze(-1)


device = xm.xla_device()
torch.manual_seed(0)
model = Reg(X.mean(0).astype(np.float64), X.std(0).astype(np.float64)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(5):
    idx = torch.randint(0, 512, (64,))
    xb, yb = torch.from_numpy(X)[idx].to(device), torch.from_numpy(Y)[idx].to(device)
    loss = F.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
