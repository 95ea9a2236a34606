"""Class weights from NumPy float64 put on the device with torch.as_tensor(..., device=): float64 on the
device (bf16 under the switch). The migration calls them "made f32" (BFM087): stochastic casts them at
the loss's weight= but leaves `class_w[yb].sum()` a float64 gather+sum on the device; amp leaves them
float64 and the loss under autocast fails at the sync (mixed precision)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from _ir import ir_dtype


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    prior = np.array([0.5, 0.25, 0.15, 0.1])
    y = rng.choice(4, size=n, p=prior)
    centers = np.random.default_rng(1234).normal(size=(4, 6))
    x = centers[y] + rng.normal(size=(n, 6))
    return x.astype(np.float32), y


def main():
    device = xm.xla_device()
    _, labels = make_data(200, seed=0)
    counts = np.bincount(labels, minlength=4)
    class_w = torch.as_tensor(counts.sum() / (4 * counts), device=device)
    scale = torch.tensor(0.5, device=device)
    torch.manual_seed(0)
    model = nn.Linear(6, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        xb, yb = torch.randn(32, 6).to(device), torch.randint(0, 4, (32,)).to(device)
        logits = model(xb)
        per = F.cross_entropy(logits, yb, weight=class_w, reduction="none")
        loss = per.sum() / class_w[yb].sum()
        denom = class_w[yb].sum()
        print(f"step {step}: class_w IR {ir_dtype(class_w)} | class_w[yb].sum() IR {ir_dtype(denom)} | loss IR {ir_dtype(loss)}")
        opt.zero_grad()
        (loss * scale).backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")


main()
