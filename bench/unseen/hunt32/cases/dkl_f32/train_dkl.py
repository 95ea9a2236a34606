"""Deep kernel learning (the linear algebra in float32, as BFM155 asked): an MLP feature map under an exact GP (RBF kernel), trained on the marginal likelihood."""
import math
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class FeatureGP(nn.Module):
    def __init__(self, d_in=3, d_feat=4):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(d_in, 32), nn.Tanh(), nn.Linear(32, d_feat))
        self.log_ls = nn.Parameter(torch.zeros(()))
        self.log_sf = nn.Parameter(torch.zeros(()))
        self.log_noise = nn.Parameter(torch.tensor(-2.0))

    def kernel(self, a, b):
        d2 = torch.cdist(a, b).pow(2)
        return self.log_sf.exp() ** 2 * torch.exp(-0.5 * d2 / self.log_ls.exp() ** 2)

    def nll(self, x, y):
        f = self.phi(x)
        n = x.shape[0]
        K = self.kernel(f, f) + (self.log_noise.exp() ** 2 + 1e-4) * torch.eye(n, device=x.device)
        L = torch.linalg.cholesky(K.float())
        alpha = torch.cholesky_solve(y.float().unsqueeze(-1), L)
        return 0.5 * (y.float() @ alpha.squeeze(-1)) + L.diagonal().log().sum() + 0.5 * n * math.log(2 * math.pi)

    def predict(self, x_tr, y_tr, x_te):
        f_tr, f_te = self.phi(x_tr), self.phi(x_te)
        K = self.kernel(f_tr, f_tr) + (self.log_noise.exp() ** 2 + 1e-4) * torch.eye(len(x_tr), device=x_tr.device)
        L = torch.linalg.cholesky(K.float())
        return self.kernel(f_te, f_tr).float() @ torch.cholesky_solve(y_tr.float().unsqueeze(-1), L).squeeze(-1)


rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, size=(96, 3)).astype(np.float32)
Y = (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * X[:, 2] + 0.05 * rng.normal(size=96)).astype(np.float32)

device = xm.xla_device()
model = FeatureGP().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x_tr, y_tr = torch.from_numpy(X[:64]).to(device), torch.from_numpy(Y[:64]).to(device)
x_te, y_te = torch.from_numpy(X[64:]).to(device), torch.from_numpy(Y[64:]).to(device)
for step in range(25):
    loss = model.nll(x_tr, y_tr) / len(x_tr)
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt, barrier=True)
    if step % 5 == 0:
        print(f"step {step} nll/n {loss.item():.4f}")
with torch.no_grad():
    mu = model.predict(x_tr, y_tr, x_te)
print("DTYPES", model.log_ls.dtype, mu.dtype, loss.dtype)
print("test rmse", float(np.sqrt(((mu.cpu().numpy() - Y[64:]) ** 2).mean())))
