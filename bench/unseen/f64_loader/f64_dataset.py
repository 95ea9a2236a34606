"""Regression on float64 NumPy data through a DataLoader; predictions saved with np.save."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, TensorDataset


def make_loader(n=256, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.05 * rng.normal(size=n)
    return DataLoader(TensorDataset(torch.from_numpy(X), torch.from_numpy(y)), batch_size=32, shuffle=False)


def main(out_dir):
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3)
    loss_fn = nn.SmoothL1Loss()
    loader = make_loader()
    step = 0
    while step < 12:
        for xb, yb in loader:
            pred = model(xb.to(device)).squeeze(-1)
            loss = loss_fn(pred, yb.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            xm.mark_step()
            print(f"step {step} loss {loss.item():.5f}")
            step += 1
            if step == 12:
                break
    model.eval()
    preds = []
    with torch.no_grad():
        for xb, _ in make_loader(64, seed=1):
            preds.append(model(xb.to(device)).cpu().numpy())
    np.save(os.path.join(out_dir, "preds.npy"), np.concatenate(preds))
    print("saved", np.concatenate(preds).dtype)


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
