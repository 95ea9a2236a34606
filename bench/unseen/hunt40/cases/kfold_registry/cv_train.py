"""K-fold CV of a tabular regressor chosen from a registry; out-of-fold predictions and a CV score."""
import argparse
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

import models

MODELS = {"mlp": models.MLP, "resmlp": models.ResMLP}


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


def build_model(name, cfg):
    cls = MODELS[name] if name in MODELS else getattr(models, name)
    return cls(**cfg)


def make_data(n=384, n_num=6, n_cat=2, card=10, seed=0):
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, n_num))
    cat = rng.integers(0, card, size=(n, n_cat))
    y = num @ rng.normal(size=n_num) + 0.5 * (cat[:, 0] % 3) + rng.normal(scale=0.1, size=n)
    return num, cat, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()
    num, cat, y = make_data()
    cfg = {"n_num": num.shape[1], "n_cat": cat.shape[1], "card": 10}
    folds = np.arange(len(y)) % args.folds
    oof = np.zeros(len(y), dtype=np.float32)
    out_dir = tempfile.mkdtemp(prefix="cv_")
    for k in range(args.folds):
        tr, va = folds != k, folds == k
        model = build_model(args.model, cfg).to(dev)
        model.apply(init_weights)
        model.emb.requires_grad_(False)  # keep the pretrained-style embedding fixed
        optimizer = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()), lr=3e-3)
        xn = torch.tensor(num[tr], dtype=torch.float32, device=dev)
        xc = torch.tensor(cat[tr], device=dev)
        yt = torch.tensor(y[tr], dtype=torch.float32, device=dev)
        for step in range(args.steps):
            idx = torch.randint(0, xn.shape[0], (32,), device=dev)
            loss = nn.functional.mse_loss(model(xn[idx], xc[idx]), yt[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            xm.mark_step()
            print(f"fold {k} step {step} loss {loss.item():.4f}")
        model.eval()
        with torch.no_grad():
            pred = model(torch.tensor(num[va], dtype=torch.float32, device=dev), torch.tensor(cat[va], device=dev))
        oof[va] = pred.cpu().numpy()
        torch.save(model.state_dict(), os.path.join(out_dir, f"fold{k}.pt"))
    rmse = float(np.sqrt(np.mean((oof - y) ** 2)))
    sd = torch.load(os.path.join(out_dir, "fold0.pt"))
    print("CV rmse", round(rmse, 4), "DTYPES", oof.dtype, sd["out.weight" if "out.weight" in sd else "body.2.weight"].dtype)


if __name__ == "__main__":
    main()
