"""Batch scorer for the churn model. The weights come from the offline NumPy fit (float64);
we score on the accelerator and check the scores against the NumPy float64 reference before
writing them. Inference only."""
import argparse
import csv
import json
import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def offline_fit(d, h, seed=0):
    """Stand-in for the offline fit: float64 weights, feature mean/std."""
    rng = np.random.default_rng(seed)
    return {"w1": rng.normal(0, 1 / np.sqrt(d), (h, d)), "b1": rng.normal(0, 0.1, h),
            "w2": rng.normal(0, 1 / np.sqrt(h), (1, h)), "b2": np.array([-0.3]),
            "mean": rng.normal(0, 1, d), "std": rng.uniform(0.5, 2.0, d)}


def numpy_reference(fit, X):
    z = (X - fit["mean"]) / fit["std"]
    h = np.maximum(z @ fit["w1"].T + fit["b1"], 0.0)
    return 1.0 / (1.0 + np.exp(-(h @ fit["w2"].T + fit["b2"])[:, 0]))


class Scorer(nn.Module):
    def __init__(self, fit):
        super().__init__()
        d, h = fit["w1"].shape[1], fit["w1"].shape[0]
        self.register_buffer("mean", torch.from_numpy(fit["mean"]).float())
        self.register_buffer("std", torch.from_numpy(fit["std"]).float())
        self.hidden = nn.Linear(d, h)
        self.out = nn.Linear(h, 1)
        with torch.no_grad():
            self.hidden.weight.copy_(torch.from_numpy(fit["w1"]))
            self.hidden.bias.copy_(torch.from_numpy(fit["b1"]))
            self.out.weight.copy_(torch.from_numpy(fit["w2"]))
            self.out.bias.copy_(torch.from_numpy(fit["b2"]))

    def forward(self, x):
        z = (x - self.mean) / self.std
        return self.out(torch.relu(self.hidden(z))).squeeze(-1)


@dataclass
class Scored:
    start: int
    prob: torch.Tensor
    rank_key: torch.Tensor


def stream(X, batch, device):
    for start in range(0, X.shape[0], batch):
        yield start, torch.from_numpy(X[start:start + batch]).float().to(device)


def auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=6144)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()
    out_dir = os.environ.get("SCORER_OUT", "out")
    fit = offline_fit(24, 48)
    rng = np.random.default_rng(1)
    X = rng.normal(fit["mean"], fit["std"], (args.rows, 24))
    ref = numpy_reference(fit, X)
    labels = (rng.random(args.rows) < ref).astype(np.int64)

    device = xm.xla_device()
    model = Scorer(fit).to(device).eval()
    temperature = torch.tensor(1.25, device=device)
    results = []
    with torch.no_grad():
        for start, xb in stream(X, args.batch, device):
            logit = model(xb) / temperature
            prob = torch.sigmoid(logit)
            results.append(Scored(start, prob, -logit))
            xm.mark_step()
    probs = torch.cat([r.prob for r in results]).cpu().numpy()
    top = torch.cat([r.rank_key for r in results]).argsort()[:10].cpu().tolist()
    calibrated_ref = 1.0 / (1.0 + np.exp(-np.log(ref / (1 - ref)) / 1.25))
    err = np.abs(probs - calibrated_ref)
    summary = {"rows": int(args.rows), "auc": float(auc(probs, labels)), "max_abs_err": float(err.max()),
               "mean_prob": float(probs.mean()), "dtype": str(probs.dtype), "top10": top}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "scores.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "prob"])
        w.writerows((i, f"{p:.6f}") for i, p in enumerate(probs))
    np.save(os.path.join(out_dir, "scores.npy"), probs)
    print(json.dumps(summary))
    if err.max() > 0.05:
        raise SystemExit(f"scores drift from the float64 reference by {err.max():.4f}")


if __name__ == "__main__":
    main()
