"""Listwise learning to rank: ListMLE plus a RankNet pairwise term, NDCG@5 on a
held-out set, score histograms every few steps.

Each query has up to L candidate documents (padding masked out); relevance
labels are graded 0..4.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

FEAT, L, K = 12, 10, 5
NEG = -1e4


def synth(rng, n):
    w = np.linspace(-1.0, 1.0, FEAT).astype(np.float32)
    x = rng.standard_normal((n, L, FEAT)).astype(np.float32)
    score = x @ w + 0.3 * rng.standard_normal((n, L)).astype(np.float32)
    rel = np.digitize(score, [-1.0, 0.0, 1.0, 2.0]).astype(np.int64)
    lengths = rng.integers(5, L + 1, n)
    valid = np.arange(L)[None, :] < lengths[:, None]
    rel[~valid] = 0
    return torch.from_numpy(x), torch.from_numpy(rel), torch.from_numpy(valid)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEAT, 64), nn.ReLU(), nn.LayerNorm(64), nn.Linear(64, 1))

    def forward(self, x, valid):
        return self.net(x).squeeze(-1).masked_fill(~valid, NEG)


def listmle(scores, rel, valid):
    # sort by true relevance (padding last), then the Plackett-Luce likelihood of that order
    key = rel.float() + valid.float() * 10.0
    order = key.argsort(dim=1, descending=True)
    s = scores.gather(1, order)
    v = valid.gather(1, order)
    tail = torch.logcumsumexp(s.flip(1), dim=1).flip(1)
    return ((tail - s) * v).sum(1).mean()


def ranknet(scores, rel, valid):
    better = (rel[:, :, None] > rel[:, None, :]) & valid[:, :, None] & valid[:, None, :]
    diff = scores[:, :, None] - scores[:, None, :]
    pairs = better.float()
    return (F.softplus(-diff) * pairs).sum() / pairs.sum().clamp_min(1.0)


def ndcg_at_k(scores, rel, k=K):
    gains = torch.pow(2.0, rel.float()) - 1.0
    disc = 1.0 / torch.log2(torch.arange(2, k + 2, device=scores.device).float())
    top = scores.topk(k, dim=1).indices
    dcg = (gains.gather(1, top) * disc).sum(1)
    ideal = (gains.sort(dim=1, descending=True).values[:, :k] * disc).sum(1)
    return (dcg / ideal.clamp_min(1e-6)).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--lists", type=int, default=32)
    ap.add_argument("--pair-weight", type=float, default=0.5)
    args = ap.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    model = Scorer().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    vx, vrel, vvalid = (t.to(device) for t in synth(rng, 64))

    for step in range(1, args.steps + 1):
        x, rel, valid = (t.to(device) for t in synth(rng, args.lists))
        scores = model(x, valid)
        loss = listmle(scores, rel, valid) + args.pair_weight * ranknet(scores, rel, valid)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        if step % 4 == 0:
            with torch.no_grad():
                vs = model(vx, vvalid)
                ndcg = ndcg_at_k(vs, vrel)
            hist, _ = np.histogram(vs[vvalid].cpu().numpy(), bins=8, range=(-4, 4))
            print(f"step {step} loss {loss.item():.4f} ndcg@{K} {ndcg.item():.4f} hist {hist.tolist()}")
        else:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
