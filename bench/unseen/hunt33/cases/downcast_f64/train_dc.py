"""Polynomial-feature regression under XLA_DOWNCAST_BF16 (float64 on the device becomes f32, f32 becomes bf16):
the float64 NumPy design matrix is built on the device with torch.tensor(..., device=device), the f32 model
trains on it; a float64 per-feature scale made on the device divides the input; the epoch's squared error is
accumulated on the device and the learned weights go to NumPy at the end."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

N, K, STEPS = 48, 5, 10


def design(rng):
    t = rng.uniform(-1.0, 1.0, size=N)
    xs = np.stack([t ** k for k in range(1, K + 1)], axis=1)
    ys = np.cos(2.0 * t) + 0.01 * rng.standard_normal(N)
    return xs, ys


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(K, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scale = torch.tensor([1.0 / k for k in range(1, K + 1)], dtype=torch.float64, device=device)
    rng = np.random.default_rng(1)
    sq_err = torch.zeros((), device=device)
    for step in range(STEPS):
        xs, ys = design(rng)
        x = torch.tensor(xs, device=device)
        y = torch.tensor(ys, device=device)
        pred = model((x / scale).float()).squeeze(-1)
        loss = ((pred - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sq_err += loss.detach()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    print(f"mean sq err {(sq_err / STEPS).item():.5f}")
    np.save("w.npy", model[0].weight.detach().cpu().numpy())


if __name__ == "__main__":
    main()
