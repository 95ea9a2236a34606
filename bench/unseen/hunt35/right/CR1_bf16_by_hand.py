"""Post-hoc temperature scaling: a frozen classifier's validation logits are computed
on the device, one scalar temperature is fitted with L-BFGS on the NLL, and the
calibrated probabilities plus reliability numbers are written for the report."""
import argparse
import csv
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def make_classifier(n_in=20, n_cls=6):
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Linear(64, n_cls))


def ece(probs, labels, bins=10):
    conf = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    edges = np.linspace(0.0, 1.0, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (conf > lo) & (conf <= hi)
        if sel.any():
            total += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(total)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=12)
    ap.add_argument("--out", default="calib")
    args = ap.parse_args()
    device = torch_xla.device()
    clf = make_classifier().eval()
    g = torch.Generator().manual_seed(7)
    x = torch.randn(512, 20, generator=g) * 3.0
    with torch.no_grad():  # labels that agree with the model most of the time
        y = (clf(x) + 4.0 * torch.randn(512, 6, generator=g)).argmax(dim=1)
    clf = clf.to(device=device, dtype=torch.bfloat16)
    for p in clf.parameters():
        p.requires_grad_(False)
    logits = clf(x.to(device).bfloat16()).detach()
    labels = y.to(device)

    log_t = torch.zeros(1, device=device, dtype=torch.bfloat16).requires_grad_()
    opt = torch.optim.LBFGS([log_t], lr=0.5, max_iter=2, line_search_fn=None)

    def closure():
        opt.zero_grad()
        nll = F.cross_entropy(logits / log_t.exp(), labels)
        nll.backward()
        return nll

    for it in range(args.iters):
        nll = opt.step(closure)
        torch_xla.sync()
        print(f"iter {it} nll {nll.item():.5f} T {log_t.exp().item():.4f}")

    probs = F.softmax(logits / log_t.exp(), dim=1).detach()
    xm.mark_step()
    print("logits", logits.dtype, "log_t", log_t.dtype, "probs", probs.dtype)
    p_host = probs.float().cpu().numpy()
    y_host = labels.cpu().numpy()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "calibrated.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label"] + [f"p{c}" for c in range(p_host.shape[1])])
        for label, row in zip(y_host, p_host):
            w.writerow([int(label)] + [f"{v:.6f}" for v in row])
    report = {"temperature": log_t.exp().item(), "ece": ece(p_host, y_host)}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    print("report", report, "host probs", p_host.dtype)


if __name__ == "__main__":
    main()
