"""Gradient accumulation (loss / ACCUM) and a no_grad evaluation that writes predictions with np.savetxt."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 6))


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--accum", type=int, default=3)
    p.add_argument("--out", default="/tmp/accum_savetxt")
    return p.parse_args()


def batches(rng, n):
    x = rng.normal(size=(n, 10)).astype(np.float32)
    y = (np.sin(x[:, :1]) + 0.1 * x[:, 1:2]).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def main():
    args = parse()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = nn.Sequential(nn.Linear(10, 24), nn.SiLU(), nn.LayerNorm(24), nn.Linear(24, 1)).to(dev)
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    crit = nn.SmoothL1Loss()
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for _ in range(args.accum):
            x, y = batches(rng, 8)
            loss = crit(model(x.to(dev)), y.to(dev)) / args.accum
            loss.backward()
            total += loss.item()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {total:.4f}")
    model.eval()
    preds = []
    with torch.no_grad():
        for _ in range(3):
            x, _ = batches(rng, 16)
            preds.append(model(x.to(dev)).squeeze(-1).to(torch.device("cpu")))
    arr = torch.cat(preds).numpy()
    np.savetxt(os.path.join(args.out, "preds.txt"), arr, fmt="%.5f")
    ref = torch.from_numpy(np.loadtxt(os.path.join(args.out, "preds.txt"))).to(dev)
    with torch.no_grad():
        drift = (model(x.to(dev)).squeeze(-1) - ref[-16:]).abs().max()
    np.savetxt(os.path.join(args.out, "w0.txt"), model[0].weight.detach().to("cpu").numpy())
    print("drift", drift.item(), ref.dtype, drift.dtype)
    print("DTYPES", arr.dtype, next(model.parameters()).dtype)


if __name__ == "__main__":
    main()
