"""Train a small tabular regressor briefly, then evaluate it and report metrics
computed on the host with NumPy and plain Python, the way our reporting code does."""
import os

os.environ["XLA_USE_BF16"] = "1"

import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch_xla

STEPS = int(os.environ.get("STEPS", "30"))
dev = torch_xla.device()
torch.manual_seed(0)

W_TRUE = torch.randn(12, 1)


def batch(n=64):
    x = torch.randn(n, 12)
    y = x @ W_TRUE + 0.1 * torch.randn(n, 1)
    return x, y


model = nn.Sequential(nn.Linear(12, 48), nn.GELU(), nn.Linear(48, 1)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

for step in range(STEPS):
    x, y = batch()
    x, y = x.to(dev), y.to(dev)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f}")

# ---- evaluation: device outputs leave the device in several ways ----
model.eval()
preds, targets, batch_losses = [], [], []
with torch.no_grad():
    for _ in range(4):
        x, y = batch(32)
        x, y = x.to(dev), y.to(dev)
        p = model(x)
        preds.append(p)
        targets.append(y)
        batch_losses.append(nn.functional.l1_loss(p, y).cpu())
    torch_xla.sync()

pred_np = torch.stack(preds).cpu().numpy().reshape(-1)
targ_np = torch.cat(targets).numpy(force=True).reshape(-1)
mae_per_batch = np.asarray(batch_losses)
resid = pred_np - targ_np
rmse = math.sqrt(float(np.mean(resid ** 2)))
r2 = 1.0 - np.sum(resid ** 2) / np.sum((targ_np - targ_np.mean()) ** 2)
worst = max(float(t) for t in batch_losses)

bias = torch.cat(preds).mean() - torch.cat(targets).mean()
print(f"eval bias {bias}")
print(f"rmse {rmse:.4f} r2 {r2:.4f} worst batch mae {worst:.4f} maes {mae_per_batch.round(4)}")

report = {
    "rmse": rmse,
    "r2": float(r2),
    "first_preds": preds[0][:4, 0].tolist(),
    "weight_norm": model[0].weight.norm().item(),
}
with open("eval_report.json", "w") as f:
    json.dump(report, f, indent=1)

print("DTYPES", model[0].weight.dtype, preds[0].dtype, pred_np.dtype, mae_per_batch.dtype,
      type(report["first_preds"][0]).__name__)
