"""Fit a small regressor on a synthetic price table; write a checkpoint with the target scaling."""
import argparse

import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm

from common import Regressor, make_table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--ckpt", default="ckpt/regressor.pt")
    args = ap.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    X, y = make_table(2048, seed=0)
    y_mean, y_std = float(y.mean()), float(y.std())
    Xt = torch.from_numpy(X).float()
    yt = torch.from_numpy((y - y_mean) / y_std).float()

    model = Regressor().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    g = torch.Generator().manual_seed(1)
    running = torch.zeros((), dtype=torch.float64, device=device)
    for step in range(args.steps):
        idx = torch.randint(0, len(Xt), (args.batch,), generator=g)
        xb, yb = Xt[idx].to(device), yt[idx].to(device)
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        running += loss.detach().double()
        torch_xla.sync()
        if (step + 1) % 10 == 0:
            print(f"step {step + 1} loss {loss.item():.4f} mean {(running / (step + 1)).item():.4f}")

    xm.save({"model": model.state_dict(), "y_mean": y_mean, "y_std": y_std, "steps": args.steps}, args.ckpt)
    print(f"saved {args.ckpt}")


if __name__ == "__main__":
    main()
