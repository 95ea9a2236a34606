"""Evaluate a binary risk model: streaming metrics on the device, ranking metrics on the host."""
import os

os.environ.update({"PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "CPU"), "XLA_USE_BF16": "1"})

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
from torch.utils.tensorboard import SummaryWriter


class StreamingMetrics:
    """Accumulates on the device; sums kept in float64 so long evaluations do not drift."""

    def __init__(self, device, threshold=0.5):
        self.device = device
        self.threshold = threshold
        self.reset()

    def reset(self):
        z = lambda: torch.zeros((), dtype=torch.float64, device=self.device)
        self.n, self.loss_sum, self.brier_sum = z(), z(), z()
        self.tp, self.fp, self.fn = z(), z(), z()
        self.scores, self.labels = [], []

    @torch.no_grad()
    def update(self, logits, y):
        p = torch.sigmoid(logits)
        pred = p > self.threshold
        self.n += y.numel()
        self.loss_sum += nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="sum").double()
        self.brier_sum += ((p - y) ** 2).sum().double()
        self.tp += (pred & (y > 0.5)).sum()
        self.fp += (pred & (y < 0.5)).sum()
        self.fn += (~pred & (y > 0.5)).sum()
        self.scores.append(p)
        self.labels.append(y)

    def compute(self):
        prec = self.tp / (self.tp + self.fp).clamp(min=1)
        rec = self.tp / (self.tp + self.fn).clamp(min=1)
        return {"loss": self.loss_sum / self.n, "brier": self.brier_sum / self.n,
                "precision": prec, "recall": rec, "f1": 2 * prec * rec / (prec + rec).clamp(min=1e-12)}


def auroc(scores, labels):
    order = np.argsort(-scores)
    lab = labels[order]
    tps, fps = np.cumsum(lab), np.cumsum(1 - lab)
    tpr, fpr = tps / max(tps[-1], 1), fps / max(fps[-1], 1)
    return float(np.trapz(np.r_[0, tpr], np.r_[0, fpr]))


device = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
w = torch.randn(10)
model.to(device).eval()

metrics = StreamingMetrics(device)
writer = SummaryWriter("runs/eval")
for i in range(8):
    x = torch.randn(64, 10)
    y = (x @ w > 0).float()
    logits = model(x.to(device)).squeeze(-1)
    metrics.update(logits, y.to(device))
    writer.add_scalar("eval/running_loss", metrics.loss_sum / metrics.n, i)

res = metrics.compute()
scores = torch.cat(metrics.scores).cpu().numpy()
labels = torch.cat(metrics.labels).cpu().numpy()
print("DTYPES", model[0].weight.dtype, metrics.loss_sum.dtype, res["f1"].dtype, scores.dtype)
for k, v in res.items():
    writer.add_scalar(f"eval/{k}", v, 0)
writer.add_histogram("eval/scores", torch.cat(metrics.scores), 0)
print({k: round(v.item(), 4) for k, v in res.items()}, "auroc", round(auroc(scores, labels), 4))
writer.close()
