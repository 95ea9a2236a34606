"""Offline evaluation of a multi-label image tagger: mAP, best global threshold, calibration."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

TAGS = 6
cpu = torch.device("cpu")


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, TAGS)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def to_np(t):
    return t.detach().cpu().numpy()


def average_precision(y, s):
    order = np.argsort(-s)
    y = y[order]
    hits = np.cumsum(y)
    prec = hits / np.arange(1, len(y) + 1)
    return float((prec * y).sum() / max(y.sum(), 1))


def batches(n, bs, rng):
    for _ in range(n):
        imgs = rng.integers(0, 256, (bs, 1, 16, 16), dtype=np.uint8)
        labels = (imgs.reshape(bs, -1)[:, : TAGS * 40].reshape(bs, TAGS, 40).mean(-1) > 127).astype(np.int64)
        yield imgs, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default="tagger.pt")
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--report", default="eval_report.json")
    args = ap.parse_args()
    bs = int(os.environ.get("EVAL_BATCH", "32"))
    device = xm.xla_device()
    model = Tagger()
    if os.path.exists(args.ckpt):
        model.load_state_dict(torch.load(args.ckpt, map_location="cpu"))
    model = model.to(device).eval()
    probs_all, labels_all, logits_all = [], [], []
    hist = torch.zeros(10, device=device)
    with torch.no_grad():
        for imgs, labels in batches(args.batches, bs, np.random.default_rng(0)):
            x = torch.from_numpy(imgs).to(device).float().div_(255.0)
            x = (x - 0.5) / 0.25
            logits = model(x)
            p = torch.sigmoid(logits)
            hist += torch.histc(p, bins=10, min=0.0, max=1.0)
            probs_all.append(p.to(cpu))
            logits_all.append(logits)
            labels_all.append(torch.from_numpy(labels))
            xm.mark_step()
    probs = torch.cat(probs_all)
    labels = torch.cat(labels_all)
    aps = [average_precision(labels[:, k].numpy(), probs[:, k].numpy()) for k in range(TAGS)]

    dev_p, dev_y = probs.to(device), labels.to(device)
    th = torch.linspace(0.05, 0.95, 19, device=device)
    pred = (dev_p[None] > th[:, None, None]).float()
    tp = (pred * dev_y[None]).sum((1, 2))
    f1 = 2 * tp / (pred.sum((1, 2)) + dev_y.sum() + 1e-9)
    best = th[f1.argmax()]
    report = {"mAP": float(np.mean(aps)), "per_tag_ap": aps, "best_threshold": float(best),
              "best_f1": f1.max().item(), "calibration_hist": (hist / hist.sum()).tolist(),
              "f1_curve": to_np(f1).round(4).tolist()}
    torch.save(torch.cat(logits_all).cpu(), os.path.splitext(args.report)[0] + "_logits.pt")
    with open(args.report, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: report[k] for k in ("mAP", "best_threshold", "best_f1")}))


if __name__ == "__main__":
    main()
