"""Batch prediction for the churn classifier: loads the exported checkpoint, writes predictions.csv."""
import csv
import json
import os
import sys

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

CKPT = "out/churn.pt"


class Churn(nn.Module):
    def __init__(self, d_in=12, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.out = nn.Linear(hidden, 2)

    def forward(self, x):
        return self.out(self.net(x))


def export_if_missing():
    # stands in for the training job's export (plain FP32 on the host)
    if not os.path.exists(CKPT):
        os.makedirs("out", exist_ok=True)
        torch.manual_seed(0)
        torch.save({"model": Churn().state_dict(), "temperature": torch.tensor(1.7),
                    "feature_mean": torch.randn(12), "feature_std": torch.rand(12) + 0.5}, CKPT)


def main():
    export_if_missing()
    device = xm.xla_device()
    state = torch.load(CKPT, map_location=device)
    model = Churn().to(device)
    model.load_state_dict(state["model"])
    model.eval()
    temperature = state["temperature"]
    mu, sd = state["feature_mean"], state["feature_std"]

    rng = np.random.default_rng(1)
    table = rng.normal(size=(200, 12)).astype(np.float32)
    probs, logits_all = [], []
    with torch.no_grad():
        for start in range(0, len(table), 64):
            x = torch.from_numpy(table[start:start + 64]).to(device)
            x = (x - mu) / sd
            logits = model(x) / temperature
            logits_all.append(logits)
            probs.append(torch.softmax(logits, dim=-1)[:, 1])
    xm.mark_step()
    p = np.concatenate([t.cpu().numpy() for t in probs])
    with open("out/predictions.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "p_churn"])
        for i, v in enumerate(torch.cat(probs).tolist()):
            w.writerow([i, round(v, 5)])
    torch.save(logits_all, "out/logits.pt")
    saved = torch.load("out/logits.pt")
    print("DTYPES", temperature.dtype, mu.dtype, logits_all[0].dtype, saved[0].dtype, p.dtype)
    json.dump({"mean_p": float(p.mean()), "n": len(p)}, open("out/summary.json", "w"))
    print("mean p", p.mean())


if __name__ == "__main__":
    sys.exit(main())
