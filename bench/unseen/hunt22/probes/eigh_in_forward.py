import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla


class Whiten(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        h = self.fc(x)
        hc = h - h.mean(0)
        cov = hc.T @ hc / h.shape[0] + 1e-3 * torch.eye(h.shape[1], device=h.device)
        evals, evecs = torch.linalg.eigh(cov)
        z = hc @ evecs @ torch.diag(evals.rsqrt()) @ evecs.T
        return self.head(z)


device = torch_xla.device()
model = Whiten(6).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for _ in range(3):
    x = torch.randn(32, 6).to(device)
    y = torch.randn(32, 1).to(device)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss dtype", loss.dtype)
