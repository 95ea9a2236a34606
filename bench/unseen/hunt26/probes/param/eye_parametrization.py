import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
import torch_xla

device = torch_xla.device()


class NearIdentity(nn.Module):
    """W = I + 0.1 * tanh(X): a residual mixing matrix kept close to the identity."""

    def forward(self, X):
        return torch.eye(X.shape[0], device=X.device) + 0.1 * torch.tanh(X)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(16, 16, bias=False)
        P.register_parametrization(self.mix, "weight", NearIdentity())
        self.out = nn.Linear(16, 2)

    def forward(self, x):
        return self.out(F.relu(self.mix(x)))


model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x, y = torch.randn(8, 16).to(device), torch.randint(0, 2, (8,)).to(device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("mix weight dtype", model.mix.weight.dtype, "loss dtype", loss.dtype)
