"""Train a small tabular regressor, then export it three ways for serving."""
import argparse
import os
import shutil

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from exporting import export_bundle, export_traced, save_cpu_state

parser = argparse.ArgumentParser()
parser.add_argument("--out", default="/tmp/tabnet_export")
args = parser.parse_args()
STEPS = int(os.environ.get("STEPS", 10))
dev = xm.xla_device()
torch.manual_seed(0)

W_true = torch.randn(12, 1)
X = torch.randn(512, 12)
Y = X @ W_true + 0.1 * torch.randn(512, 1)


class TabNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(12)
        self.mlp = nn.Sequential(nn.Linear(12, 32), nn.SiLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.mlp(self.bn(x))


model = TabNet().to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(STEPS):
    idx = torch.randint(0, 512, (64,))
    x, y = X[idx].to(dev), Y[idx].to(dev)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")

os.makedirs(args.out, exist_ok=True)
sample = X[:4].to(dev)
bundle = export_bundle(model, sample, args.out)
print("device trace", bundle(sample).cpu().flatten().tolist())
dtypes = save_cpu_state(model, os.path.join(args.out, "state.pt"))
traced = export_traced(model, X[:4], os.path.join(args.out, "model_cpu.pt"))
print("host trace", traced(X[:4]).flatten().tolist())
print("DTYPES", dtypes["mlp.0.weight"], next(traced.parameters()).dtype)
shutil.rmtree(args.out)
