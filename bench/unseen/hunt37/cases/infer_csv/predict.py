"""Batch scoring: load the churn model checkpoint, score customers in batches,
write id, probability, top reason (largest input-gradient attribution) to CSV."""
import csv
import os
import sys

import torch
import torch.nn as nn
import torch_xla

FEATURES = ["tenure", "spend", "tickets", "discount", "logins", "late_pay", "plan", "region"]
BATCH = 64


class ChurnNet(nn.Module):
    def __init__(self, d=len(FEATURES)):
        super().__init__()
        self.register_buffer("mean", torch.zeros(d))
        self.register_buffer("std", torch.ones(d))
        self.body = nn.Sequential(nn.Linear(d, 32), nn.GELU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body((x - self.mean) / self.std).squeeze(-1)


def load(path):
    model = ChurnNet()
    if not os.path.exists(path):
        g = torch.Generator().manual_seed(0)
        sd = model.state_dict()
        sd["mean"] = torch.randn(len(FEATURES), generator=g)
        sd["std"] = torch.rand(len(FEATURES), generator=g) + 0.5
        torch.save(sd, path)
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model


def customers(n, gen):
    ids = [f"C{100000 + i}" for i in range(n)]
    return ids, torch.randn(n, len(FEATURES), generator=gen)


def main():
    ckpt = sys.argv[1] if len(sys.argv) > 1 else "churn.pt"
    n = int(os.environ.get("N_CUSTOMERS", "512"))
    dev = torch_xla.device()
    model = load(ckpt).to(dev).eval()
    ids, table = customers(n, torch.Generator().manual_seed(1))
    rows, total_logit = [], torch.zeros((), device=dev)
    for step, start in enumerate(range(0, n, BATCH)):
        xb = table[start:start + BATCH].to(dev).requires_grad_()
        logit = model(xb)
        grads = torch.autograd.grad(logit.sum(), xb)[0]
        attribution = (grads * (xb - model.mean)).detach()
        prob = torch.sigmoid(logit).detach()
        top = attribution.abs().argmax(-1)
        total_logit = total_logit + logit.detach().sum()
        torch_xla.sync()
        probs, reasons = prob.cpu().tolist(), top.cpu().tolist()
        for cid, p, r in zip(ids[start:start + BATCH], probs, reasons):
            rows.append((cid, round(p, 6), FEATURES[r]))
        print(f"step {step} loss {-torch.log(prob).mean().item():.5f}")
    with open("scores.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["customer_id", "churn_prob", "top_reason"])
        w.writerows(rows)
    mean_logit = (total_logit / n).item()
    print(f"scored {len(rows)} mean logit {mean_logit:.4f} first {rows[0]}")
    print("DTYPES weight", model.body[0].weight.dtype, "buffer", model.mean.dtype, "prob", prob.dtype,
          "attr", attribution.cpu().dtype, "host prob", type(probs[0]).__name__)


if __name__ == "__main__":
    main()
