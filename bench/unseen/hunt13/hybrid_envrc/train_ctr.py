"""Click-through-rate model with a large sparse embedding table kept in host memory.

The user and item tables are too large for the accelerator in production, so they stay on the CPU
(sparse gradients, SparseAdam); only the looked-up rows travel to the device, where the dense
interaction tower runs (Adam). Synthetic clicks come from a hidden low-rank affinity.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

N_USERS, N_ITEMS, DIM = 4000, 2500, 16


class HostEmbeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(N_USERS, DIM, sparse=True)
        self.item = nn.Embedding(N_ITEMS, DIM, sparse=True)
        nn.init.normal_(self.user.weight, std=0.05)
        nn.init.normal_(self.item.weight, std=0.05)

    def forward(self, users, items):
        return self.user(users), self.item(items)


class Tower(nn.Module):
    def __init__(self, n_dense=4):
        super().__init__()
        self.dense_proj = nn.Linear(n_dense, DIM)
        self.mlp = nn.Sequential(nn.Linear(4 * DIM, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, u, v, dense):
        d = self.dense_proj(dense)
        return self.mlp(torch.cat([u, v, u * v, d], dim=-1)).squeeze(-1)


def synthetic_clicks(n, rng):
    pu = rng.standard_normal((N_USERS, 3))
    pi = rng.standard_normal((N_ITEMS, 3))
    users = rng.integers(0, N_USERS, size=n)
    items = rng.integers(0, N_ITEMS, size=n)
    dense = rng.standard_normal((n, 4)).astype(np.float32)
    logit = (pu[users] * pi[items]).sum(1) + 0.5 * dense[:, 0] - 0.3
    clicks = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return (torch.from_numpy(users), torch.from_numpy(items), torch.from_numpy(dense), torch.from_numpy(clicks))


def auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / max(1, n_pos * n_neg))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    train = synthetic_clicks(20000, rng)
    val = synthetic_clicks(2048, rng)

    device = torch_xla.device()
    emb = HostEmbeddings()
    tower = Tower().to(device)
    emb_opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
    tower_opt = torch.optim.Adam(tower.parameters(), lr=2e-3)

    history = []
    for step in range(args.steps):
        idx = torch.randint(0, len(train[0]), (args.batch,))
        users, items, dense, clicks = (t[idx] for t in train)
        u, v = emb(users, items)
        logits = tower(u.to(device), v.to(device), dense.to(device))
        loss = F.binary_cross_entropy_with_logits(logits, clicks.to(device))
        emb_opt.zero_grad()
        tower_opt.zero_grad()
        loss.backward()
        tower_opt.step()
        emb_opt.step()
        torch_xla.sync()
        history.append(loss.item())
        if step % 10 == 0:
            print(f"step {step} loss {history[-1]:.4f} user-row norm {emb.user.weight[users[0]].norm().item():.4f}")

    with torch.no_grad():
        u, v = emb(val[0], val[1])
        scores = torch.sigmoid(tower(u.to(device), v.to(device), val[2].to(device)))
    scores_np = scores.cpu().numpy()
    result = {"val_auc": auc(scores_np, val[3].numpy()), "val_mean_score": float(scores_np.mean()),
              "train_loss": history}
    print(json.dumps({k: v for k, v in result.items() if k != "train_loss"}))
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump(result, f)
    torch.save({"user": emb.user.weight.detach(), "item": emb.item.weight.detach()}, os.path.join(args.out, "tables.pt"))


if __name__ == "__main__":
    main()
