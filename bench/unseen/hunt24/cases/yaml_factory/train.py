"""Quantile regression on a synthetic tabular task; config in YAML, model from the zoo."""
import argparse
import json
import os

import numpy as np
import torch
import yaml
from torch.utils.data import DataLoader, TensorDataset

import torch_xla
import torch_xla.core.xla_model as xm

from models import build_model


def make_data(n, in_dim, rng):
    x = rng.standard_normal((n, in_dim)).astype(np.float32)
    w = rng.standard_normal(in_dim).astype(np.float32) / np.sqrt(in_dim)
    noise = (0.2 + 0.3 * np.abs(x[:, 0])) * rng.standard_normal(n).astype(np.float32)
    y = x @ w + np.sin(x[:, 1]) + noise
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


def pinball(pred, target, taus):
    diff = target.unsqueeze(-1) - pred
    return torch.maximum(taus * diff, (taus - 1) * diff).mean()


def evaluate(model, loader, taus, device):
    model.eval()
    covered, width, n, loss_sum = 0.0, 0.0, 0, 0.0
    resid = []
    with torch.no_grad():
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            pred = model(xb)
            loss_sum += pinball(pred, yb, taus).item() * len(yb)
            lo, med, hi = pred.unbind(-1)
            covered += ((yb >= lo) & (yb <= hi)).float().sum().item()
            width += (hi - lo).sum().item()
            resid.append((yb - med).abs())
            n += len(yb)
    resid = torch.cat(resid)
    p90 = torch.quantile(resid, 0.9).item()
    model.train()
    return {"pinball": loss_sum / n, "coverage": covered / n, "width": width / n, "abs_err_p90": p90}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/base.yaml")
    ap.add_argument("--out", default="out/run")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(cfg["seed"])
    rng = np.random.default_rng(cfg["seed"])

    d = cfg["data"]
    train_ds = TensorDataset(*make_data(d["n_train"], d["in_dim"], rng))
    val_ds = TensorDataset(*make_data(d["n_val"], d["in_dim"], rng))
    train_dl = DataLoader(train_ds, batch_size=d["batch_size"], shuffle=True, drop_last=True)
    val_dl = DataLoader(val_ds, batch_size=256)

    device = torch_xla.device()
    model = build_model({**cfg["model"], "in_dim": d["in_dim"]}).to(device)
    taus = torch.tensor(cfg["model"]["quantiles"], device=device)
    optimizer = torch.optim.AdamW(model.parameters(), **cfg["optim"])
    t = cfg["train"]
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=t["epochs"] * len(train_dl))

    history = []
    for epoch in range(t["epochs"]):
        for step, (xb, yb) in enumerate(train_dl):
            xb, yb = xb.to(device), yb.to(device)
            loss = pinball(model(xb), yb, taus)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), t["grad_clip"])
            optimizer.step()
            scheduler.step()
            torch_xla.sync()
            if step % t["log_every"] == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.2e}")
        metrics = evaluate(model, val_dl, taus, device)
        metrics["epoch"] = epoch
        history.append(metrics)
        print(json.dumps(metrics))

    with open(os.path.join(args.out, "history.json"), "w") as f:
        json.dump(history, f, indent=1)
    xm.save(model.state_dict(), os.path.join(args.out, "model.pt"))


if __name__ == "__main__":
    main()
