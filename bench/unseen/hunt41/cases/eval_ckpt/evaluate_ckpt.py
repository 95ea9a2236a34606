"""Evaluate a saved checkpoint and write a metrics JSON (no training here).

The checkpoint is loaded on the host, the model built from its config and moved; the calibration
temperature stored with it is applied on the device; per-class precision/recall are computed on the host in NumPy;
the logits of the first batch are kept as a float32 .npy for the regression test. If the checkpoint is missing a
seeded one is written first, so the script runs anywhere.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

ap = argparse.ArgumentParser()
ap.add_argument("--ckpt", default="/tmp/eval_ckpt_last.pt")
ap.add_argument("--metrics", default="/tmp/eval_ckpt_metrics.json")
ap.add_argument("--batches", type=int, default=int(os.environ.get("STEPS", "4")))
args = ap.parse_args()


class TextCNN(nn.Module):
    def __init__(self, vocab, dim, n_cls):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.conv = nn.Conv1d(dim, dim, 3, padding=1)
        self.cls = nn.Linear(dim, n_cls)

    def forward(self, tok):
        h = torch.relu(self.conv(self.emb(tok).transpose(1, 2)))
        return self.cls(h.amax(dim=2))


if not os.path.exists(args.ckpt):
    torch.manual_seed(0)
    cfg = {"vocab": 100, "dim": 24, "n_cls": 3}
    net = TextCNN(**cfg)
    torch.save({"config": cfg, "model": net.state_dict(), "temperature": torch.tensor(1.7)}, args.ckpt)

dev = xm.xla_device()
ckpt = torch.load(args.ckpt, map_location="cpu")
model = TextCNN(**ckpt["config"]).to(dev)
model.load_state_dict(ckpt["model"])
model.eval()
temperature = ckpt["temperature"].to(dev)

g = torch.Generator().manual_seed(11)
preds, labels, nll_sum, n = [], [], torch.zeros((), device=dev), 0
first_logits = None
with torch.no_grad():
    for b in range(args.batches):
        tok = torch.randint(0, 100, (32, 16), generator=g)
        y = (tok[:, 0] % 3)
        logits = model(tok.to(dev)) / temperature
        nll_sum += nn.functional.cross_entropy(logits, y.to(dev), reduction="sum")
        n += y.numel()
        preds.append(logits.argmax(dim=1).cpu())
        labels.append(y)
        if first_logits is None:
            first_logits = logits.cpu().numpy()
        print(f"batch {b} nll {(nll_sum / n).item():.5f}")

p = torch.cat(preds).numpy()
t = torch.cat(labels).numpy()
per_class = {}
for c in range(3):
    tp = float(np.sum((p == c) & (t == c)))
    per_class[str(c)] = {"precision": tp / max(1, np.sum(p == c)), "recall": tp / max(1, np.sum(t == c))}
metrics = {"nll": (nll_sum / n).item(), "accuracy": float(np.mean(p == t)), "per_class": per_class}
np.save(args.metrics.replace(".json", ".logits.npy"), first_logits)
with open(args.metrics, "w") as f:
    json.dump(metrics, f, indent=1)
print("DTYPES", next(model.parameters()).dtype, temperature.dtype, nll_sum.dtype, first_logits.dtype)
print("metrics", json.dumps(metrics)[:80])
