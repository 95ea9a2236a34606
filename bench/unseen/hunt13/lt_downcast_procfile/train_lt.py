"""Long-tailed classification with logit adjustment (Menon et al. 2021).

The body runs in low precision under XLA_DOWNCAST_BF16; the classifier head and the logit adjustment are
kept in float64 on purpose: the log-priors of the rare classes are around -7 and the adjustment is added
to logits of a few units, which the low-precision body could not resolve. (Under the downcast switch
float64 on the device is float32.)
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N_CLASSES = 6
D_IN = 20


def long_tail_data(n, rng, imbalance=200.0):
    freq = imbalance ** (-np.arange(N_CLASSES) / (N_CLASSES - 1))
    prior = freq / freq.sum()
    y = rng.choice(N_CLASSES, size=n, p=prior)
    means = rng.standard_normal((N_CLASSES, D_IN)) * 1.2
    x = means[y] + rng.standard_normal((n, D_IN))
    return x, y, prior, means


class AdjustedNet(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(D_IN, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, N_CLASSES, dtype=torch.float64)

    def forward(self, x):
        return self.head(self.body(x).double())


def balanced_accuracy(pred, y):
    per_class = []
    for c in range(N_CLASSES):
        mask = y == c
        if mask.any():
            per_class.append(float((pred[mask] == c).mean()))
    return float(np.mean(per_class))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--tau", type=float, default=1.0)
    ap.add_argument("--out", default="artifacts")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x_np, y_np, prior, means = long_tail_data(6000, rng)
    xv_np = means[np.repeat(np.arange(N_CLASSES), 50)] + rng.standard_normal((N_CLASSES * 50, D_IN))
    yv_np = np.repeat(np.arange(N_CLASSES), 50)

    device = torch_xla.device()
    model = AdjustedNet().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-3)
    log_prior = torch.as_tensor(np.log(prior), device=device)
    tau = torch.tensor(args.tau, dtype=torch.float64, device=device)

    for step in range(args.steps):
        idx = rng.integers(0, len(x_np), size=args.batch)
        xb = torch.as_tensor(x_np[idx], device=device).float()
        yb = torch.as_tensor(y_np[idx], device=device)
        logits = model(xb)
        loss = F.cross_entropy(logits + tau * log_prior, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 9:
            tau.mul_(0.9)
        xm.mark_step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.5f} tau {tau.item():.3f}")

    with torch.no_grad():
        xv = torch.as_tensor(xv_np, device=device).float()
        probs = F.softmax(model(xv), dim=1)
    probs_np = probs.cpu().numpy()
    pred = probs_np.argmax(1)
    summary = {"balanced_acc": balanced_accuracy(pred, yv_np), "head_bias": model.head.bias.tolist(),
               "tau": tau.item(), "probs_dtype": str(probs_np.dtype), "final_loss": loss.item()}
    print(json.dumps(summary))
    np.save(os.path.join(args.out, "val_probs.npy"), probs_np)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
