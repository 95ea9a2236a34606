"""BPR matrix factorisation with an EmbeddingBag user tower (bag of recent items, recency-weighted)."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.runtime as xr

N_USERS, N_ITEMS, HIST = 200, 300, 8


def interactions(seed):
    rng = np.random.default_rng(seed)
    taste = rng.normal(size=(N_USERS, 4)); attrs = rng.normal(size=(N_ITEMS, 4))
    scores = taste @ attrs.T
    hist = np.argsort(-scores, 1)[:, :HIST + 20]
    recent = np.stack([rng.permutation(h)[:HIST] for h in hist])
    decay = 0.8 ** np.arange(HIST)[::-1]                                  # float64 recency weights
    return recent, np.tile(decay, (N_USERS, 1)), hist[:, HIST:]


class BPR(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.user = nn.EmbeddingBag(N_ITEMS, dim, mode="sum")
        self.item = nn.Embedding(N_ITEMS, dim)
        self.item_bias = nn.Parameter(torch.zeros(N_ITEMS))

    def user_vec(self, bag, w):
        return self.user(bag.flatten(), per_sample_weights=w.flatten(), offsets=torch.arange(0, bag.numel(), bag.shape[1], device=bag.device))

    def score(self, u, items):
        return (u[:, None, :] * self.item(items)).sum(-1) + self.item_bias[items]


def main(args):
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()
    recent, decay, positives = interactions(args.seed)
    bag = torch.from_numpy(recent).to(device)
    w = torch.from_numpy(decay / decay.sum(1, keepdims=True)).float().to(device)
    pos_pool = torch.from_numpy(positives).to(device)
    model = BPR(args.dim).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr * world, weight_decay=1e-5)
    gen = torch.Generator().manual_seed(rank)
    for epoch in range(args.epochs):
        for it in range(args.iters):
            users = torch.randint(0, N_USERS, (args.bs,), generator=gen).to(device)
            pos = pos_pool[users, torch.randint(0, pos_pool.shape[1], (args.bs,), generator=gen).to(device)]
            neg = torch.randint(0, N_ITEMS, (args.bs,), generator=gen).to(device)
            u = model.user_vec(bag[users], w[users])
            s = model.score(u, torch.stack([pos, neg], 1))
            loss = -F.logsigmoid(s[:, 0] - s[:, 1]).mean()
            opt.zero_grad()
            loss.backward()
            xm.reduce_gradients(opt)
            opt.step()
            xm.mark_step()
        # hit rate @10 on held-out positives
        with torch.no_grad():
            u = model.user_vec(bag, w)
            all_scores = u @ model.item.weight.t() + model.item_bias
            all_scores.scatter_(1, bag, float("-inf"))
            top = all_scores.topk(10, dim=1).indices
            hits = (top[:, :, None] == pos_pool[:, None, :]).any(-1).float().sum()
            seen = torch.tensor(float(N_USERS * 10), device=device)
            xm.all_reduce(xm.REDUCE_SUM, [hits, seen])
            hr = (hits / seen).item()
        xm.master_print(f"epoch {epoch} bpr {loss.item():.4f} hr@10 {hr:.3f}")
    if xm.is_master_ordinal(local=False):
        os.makedirs(args.out, exist_ok=True)
        np.save(os.path.join(args.out, "item_emb.npy"), model.item.weight.detach().cpu().numpy())
        np.save(os.path.join(args.out, "user_emb.npy"), u.cpu().numpy())
        print(met.short_metrics_report())


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--bs", type=int, default=64)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="out")
    main(p.parse_args())
