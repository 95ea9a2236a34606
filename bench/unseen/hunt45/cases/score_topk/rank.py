"""Offline ranking: encode the catalogue once, score each query batch against it, write the top-k to a CSV and the
catalogue index to a .pt file. Weights come from a checkpoint; a seeded one is written on first use."""
import argparse
import csv
import os
import tempfile

os.environ.setdefault("XLA_USE_BF16", "1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Tower(nn.Module):
    def __init__(self, dim, out=16):
        super().__init__()
        self.l1 = nn.Linear(dim, 32)
        self.l2 = nn.Linear(32, out)

    def forward(self, x):
        return F.normalize(self.l2(F.silu(self.l1(x))), dim=-1)


def load_towers(ckpt):
    if not os.path.exists(ckpt):
        torch.manual_seed(0)
        torch.save({"query": Tower(10).state_dict(), "item": Tower(14).state_dict()}, ckpt)
    sd = torch.load(ckpt)
    q, it = Tower(10), Tower(14)
    q.load_state_dict(sd["query"])
    it.load_state_dict(sd["item"])
    return q, it


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "rank_job"))
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--queries", type=int, default=int(os.environ.get("STEPS", 64)))
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    dev = xm.xla_device()
    q_tower, i_tower = load_towers(os.path.join(args.work_dir, "towers.pt"))
    q_tower = q_tower.to(dev).eval()
    i_tower = i_tower.to(dev).eval()

    rng = np.random.default_rng(1)
    items = torch.from_numpy(rng.standard_normal((200, 14)).astype(np.float32))
    queries = torch.from_numpy(rng.standard_normal((args.queries, 10)).astype(np.float32))
    with torch.no_grad():
        cat = i_tower(items.to(dev))
        torch.save({"emb": cat.cpu(), "n": cat.shape[0]}, os.path.join(args.work_dir, "catalogue.pt"))
        rows = []
        for start in range(0, len(queries), 16):
            qe = q_tower(queries[start:start + 16].to(dev))
            scores = qe @ cat.T
            top = torch.topk(scores, args.k, dim=1)
            s = top.values.cpu().numpy()
            ids = top.indices.cpu().tolist()
            for r, (ii, ss) in enumerate(zip(ids, s)):
                rows.append([start + r] + [f"{i}:{v:.4f}" for i, v in zip(ii, ss)])
            xm.mark_step()
    with open(os.path.join(args.work_dir, "topk.csv"), "w", newline="") as f:
        csv.writer(f).writerows(rows)
    print("wrote", len(rows), "rows; first", rows[0][:3], "DTYPES", s.dtype)


if __name__ == "__main__":
    main()
