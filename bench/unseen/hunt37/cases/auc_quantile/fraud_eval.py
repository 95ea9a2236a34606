"""Train a fraud scorer briefly, then evaluate: ROC-AUC by hand on the host,
score quantiles and a score histogram on the device, a threshold at the 99th
percentile of legitimate traffic."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch_xla

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
N_FEAT = 24


def transactions(gen, n=512, fraud_rate=0.08):
    y = (torch.rand(n, generator=gen) < fraud_rate).float()
    x = torch.randn(n, N_FEAT, generator=gen)
    x[:, :4] += 1.5 * y[:, None]
    return x, y


def roc_auc(scores, labels):
    order = np.argsort(-scores, kind="mergesort")
    labels = labels[order]
    tp = np.cumsum(labels)
    fp = np.cumsum(1 - labels)
    tpr = np.concatenate([[0.0], tp / max(tp[-1], 1)])
    fpr = np.concatenate([[0.0], fp / max(fp[-1], 1)])
    return float(np.trapezoid(tpr, fpr)) if hasattr(np, "trapezoid") else float(np.trapz(tpr, fpr))


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(11)
    dev = torch_xla.device()
    scorer = nn.Sequential(nn.Linear(N_FEAT, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 1)).to(dev)
    pos_weight = torch.tensor([8.0], device=dev)
    opt = torch.optim.Adam(scorer.parameters(), lr=2e-3)
    for step in range(STEPS):
        x, y = transactions(gen)
        x, y = x.to(dev), y.to(dev)
        loss = nn.functional.binary_cross_entropy_with_logits(scorer(x).squeeze(-1), y, pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")

    scorer.eval()
    all_scores, all_labels = [], []
    with torch.no_grad():
        for _ in range(4):
            x, y = transactions(gen)
            all_scores.append(torch.sigmoid(scorer(x.to(dev)).squeeze(-1)))
            all_labels.append(y.to(dev))
    scores = torch.cat(all_scores)
    labels = torch.cat(all_labels)
    legit = scores[labels == 0]
    qs = torch.quantile(legit, torch.tensor([0.5, 0.9, 0.99], device=dev))
    hist = torch.histc(scores, bins=10, min=0.0, max=1.0)
    threshold = qs[-1]
    recall = ((scores >= threshold) & (labels == 1)).sum() / labels.sum().clamp(min=1)

    s_np, l_np = scores.cpu().numpy(), labels.cpu().numpy()
    auc = roc_auc(s_np, l_np)
    counts, edges = np.histogram(s_np, bins=10, range=(0.0, 1.0))
    print(f"auc {auc:.4f} recall@thr {recall.item():.4f} threshold {threshold.item():.4f}")
    print("quantiles", [round(v, 4) for v in qs.cpu().tolist()])
    print("device hist", hist.cpu().tolist(), "host hist", counts.tolist())
    print("DTYPES weight", scorer[0].weight.dtype, "loss", loss.dtype, "scores", s_np.dtype,
          "labels", l_np.dtype, "qs", qs.dtype, "hist", hist.dtype)


if __name__ == "__main__":
    main()
