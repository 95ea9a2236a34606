"""Second-stage reranking: a small scorer re-orders 32 retrieved candidates per query (inference only)."""
import argparse
import json
import os
import pickle

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

DIM, CANDS, KEEP = 16, 32, 5


class PairScorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(DIM, 32)
        self.d = nn.Linear(DIM, 32)
        self.head = nn.Sequential(nn.Linear(64 + 1, 32), nn.GELU(), nn.Linear(32, 1))

    def forward(self, q, docs, first_stage):
        qh = self.q(q)[:, None, :].expand(-1, docs.shape[1], -1)
        feats = torch.cat([qh * self.d(docs), qh - self.d(docs), first_stage[..., None]], dim=-1)
        return self.head(feats).squeeze(-1)


def load_scorer(path, device):
    if not os.path.exists(path):  # first run: a seeded "trained" scorer
        torch.manual_seed(1)
        torch.save({"state": PairScorer().state_dict(), "bias_per_rank": torch.linspace(0.3, 0.0, CANDS)}, path)
    ckpt = torch.load(path, map_location="cpu")
    model = PairScorer()
    model.load_state_dict(ckpt["state"])
    return model.to(device).eval(), ckpt["bias_per_rank"].to(device)


def dcg(rels):
    return (rels / np.log2(np.arange(2, rels.shape[-1] + 2))).sum(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=16)
    ap.add_argument("--out", default="ranked")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    device = xm.xla_device()
    model, rank_bias = load_scorer(os.path.join(args.out, "scorer.pt"), device)

    rng = np.random.default_rng(7)
    q_np = rng.normal(size=(args.queries, DIM))
    d_np = q_np[:, None, :] * rng.uniform(-1, 1, (args.queries, CANDS, 1)) + 0.5 * rng.normal(size=(args.queries, CANDS, DIM))
    bm25 = np.sort(rng.gamma(2.0, 2.0, (args.queries, CANDS)), axis=1)[:, ::-1].copy()
    rel = (d_np * q_np[:, None, :]).sum(-1) > 1.0
    cand_ids = torch.as_tensor(rng.permutation(1000)[: args.queries * CANDS].reshape(args.queries, CANDS), device=device)

    dt = torch.get_default_dtype()
    q = torch.tensor(q_np, dtype=dt, device=device)
    docs = torch.tensor(d_np, dtype=dt, device=device)
    first = torch.tensor(bm25, dtype=dt, device=device)
    first = (first - first.mean(1, keepdim=True)) / first.std(1, keepdim=True)

    with torch.no_grad():
        scores = model(q, docs, first) + rank_bias
        probs = torch.softmax(scores, dim=-1)
        top_p, top_i = torch.topk(probs, KEEP, dim=-1)
        top_ids = torch.gather(cand_ids, 1, top_i)
        margin = top_p[:, 0] - top_p[:, 1]
        confident = torch.where(margin > 0.05, top_p[:, 0], torch.zeros_like(margin))
    xm.mark_step()

    order = scores.argsort(dim=-1, descending=True).cpu().numpy()
    rel_sorted = np.take_along_axis(rel, order, axis=1).astype(np.float64)
    ideal = np.sort(rel, axis=1)[:, ::-1].astype(np.float64)
    ndcg = dcg(rel_sorted[:, :10]) / np.maximum(dcg(ideal[:, :10]), 1e-9)
    base = dcg(rel[:, :10].astype(np.float64)) / np.maximum(dcg(ideal[:, :10]), 1e-9)

    with open(os.path.join(args.out, "scores.pkl"), "wb") as f:
        pickle.dump({"scores": scores.cpu(), "probs": probs.numpy(force=True)}, f)
    result = {
        "ndcg@10": float(ndcg.mean()), "bm25_ndcg@10": float(base.mean()),
        "top_ids": top_ids.tolist()[:3], "top_p": top_p[:3].tolist(),
        "confident_frac": json.dumps((confident > 0).float().mean().item()),
    }
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result)[:300])


if __name__ == "__main__":
    main()
