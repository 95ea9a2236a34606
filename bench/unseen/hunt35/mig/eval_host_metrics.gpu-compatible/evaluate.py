"""Held-out evaluation of a 1-D CNN sensor classifier. The forward runs on the XLA
device; every metric is computed on the host with NumPy from the gathered outputs."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class SensorNet(nn.Module):
    def __init__(self, ch=3, n_cls=4):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(ch, 16, 5, padding=2), nn.ReLU(),
            nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(),
        )
        self.head = nn.Linear(32, n_cls)

    def forward(self, x):
        return self.head(self.conv(x).mean(dim=2))


def macro_f1(pred, gold, n_cls):
    f1s = []
    for c in range(n_cls):
        tp = np.sum((pred == c) & (gold == c))
        fp = np.sum((pred == c) & (gold != c))
        fn = np.sum((pred != c) & (gold == c))
        f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
    return float(np.mean(f1s))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", default="runs/eval")
    args = ap.parse_args()
    torch.manual_seed(3)
    device = xm.xla_device()
    model = SensorNet()
    model.load_state_dict(SensorNet().state_dict())  # stands in for torch.load(ckpt)
    model.to(device)
    model.to(torch.bfloat16)
    model.eval()

    signals = torch.randn(320, 3, 50)
    labels = torch.randint(0, 4, (320,))
    logp_parts, nll_sum = [], torch.zeros((), device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        for i, (xb, yb) in enumerate(zip(signals.split(args.batch), labels.split(args.batch))):
            xb, yb = xb.to(device), yb.to(device)
            logp = F.log_softmax(model(xb.to(torch.bfloat16)), dim=1)
            nll_sum += F.nll_loss(logp, yb, reduction="sum")
            xm.mark_step()
            print(f"batch {i} running nll {nll_sum.item() / ((i + 1) * args.batch):.5f} logp {logp.dtype}")
            logp_parts.append(logp.detach().to("cpu").float())
    logp_all = torch.cat(logp_parts).numpy()
    probs = np.exp(logp_all)
    gold = labels.numpy()
    pred = probs.argmax(axis=1)
    metrics = {
        "nll": nll_sum.item() / len(gold),
        "accuracy": float((pred == gold).mean()),
        "macro_f1": macro_f1(pred, gold, 4),
        "brier": float(np.mean(np.sum((probs - np.eye(4)[gold]) ** 2, axis=1))),
    }
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "logp.npy"), logp_all)
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
    print("metrics", metrics, "logp_all", logp_all.dtype)


if __name__ == "__main__":
    main()
