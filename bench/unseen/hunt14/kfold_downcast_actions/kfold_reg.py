"""K-fold cross-validation of an MLP regressor on a log-transformed target.

Each fold builds a fresh model, optimizer and OneCycle schedule. Out-of-fold predictions are
collected on the host; fold losses are accumulated in float64 (kept in fp32 on the TPU).
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

EPS = torch.finfo(torch.float32).eps


def make_data(n=1200, d=12, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    w = rng.normal(size=d) / np.sqrt(d)
    y = np.exp(0.6 * x @ w + 0.1 * rng.normal(size=n)) * 20.0
    return x, y


def build_model(d):
    return nn.Sequential(nn.Linear(d, 48), nn.LayerNorm(48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU(), nn.Linear(48, 1))


def fold_indices(n, k, seed=0):
    perm = np.random.default_rng(seed).permutation(n)
    return np.array_split(perm, k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    device = xm.xla_device()
    x_np, y_np = make_data()
    mu, sd = x_np.mean(0), x_np.std(0)
    x_all = torch.from_numpy((x_np - mu) / sd).float()
    ly_all = torch.log(torch.from_numpy(y_np).float() + EPS)
    oof = np.zeros(len(y_np))
    fold_rmse = []
    for fold, val_idx in enumerate(fold_indices(len(y_np), args.folds)):
        tr_idx = np.setdiff1d(np.arange(len(y_np)), val_idx)
        torch.manual_seed(100 + fold)
        model = build_model(x_all.shape[1]).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        steps_per_epoch = (len(tr_idx) + args.batch - 1) // args.batch
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=args.epochs * steps_per_epoch)
        rng = np.random.default_rng(fold)
        for epoch in range(args.epochs):
            order = rng.permutation(tr_idx)
            for i in range(0, len(order), args.batch):
                b = torch.from_numpy(order[i:i + args.batch])
                xb, yb = x_all[b].to(device), ly_all[b].to(device)
                pred = model(xb).squeeze(-1)
                loss = (pred.double() - yb.double()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                xm.optimizer_step(opt)
                sched.step()
                xm.mark_step()
            print(f"fold {fold} epoch {epoch} loss {loss.item():.5f}")
        model.eval()
        with torch.no_grad():
            xv = x_all[torch.from_numpy(val_idx)].to(device)
            pv = model(xv).squeeze(-1)
            oof[val_idx] = np.exp(pv.cpu().numpy())
            sq = torch.zeros((), dtype=torch.float64, device=device)
            sq += (pv.double() - ly_all[torch.from_numpy(val_idx)].to(device).double()).pow(2).sum()
            fold_rmse.append(float(torch.sqrt(sq / len(val_idx))))
        print(f"fold {fold} log-rmse {fold_rmse[-1]:.5f}")
    rel_err = np.abs(oof - y_np) / y_np
    print(f"cv log-rmse {np.mean(fold_rmse):.5f} +- {np.std(fold_rmse):.5f}; median rel err {np.median(rel_err):.4f}")
    np.save("oof_pred.npy", oof)
    with open("cv_summary.json", "w") as f:
        json.dump({"fold_rmse": fold_rmse, "oof_dtype": str(oof.dtype)}, f)


if __name__ == "__main__":
    main()
