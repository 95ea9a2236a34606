"""Two-tower retrieval: EmbeddingBag towers over sparse ids, in-batch negatives with a temperature and a
log-Q (sampling-probability) correction, recall@k over the whole catalogue at the end."""
import argparse
import os

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ.setdefault("XLA_USE_BF16", "1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

N_USERS, N_ITEMS, N_FEATS = 200, 300, 50


class Tower(nn.Module):
    def __init__(self, n_ids, n_feats, dim=32, out=16):
        super().__init__()
        self.ids = nn.Embedding(n_ids, dim)
        self.feats = nn.EmbeddingBag(n_feats, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, out))

    def forward(self, ids, feat_ids, offsets):
        h = torch.cat([self.ids(ids), self.feats(feat_ids, offsets)], dim=1)
        return F.normalize(self.mlp(h), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = Tower(N_USERS, N_FEATS)
        self.item = Tower(N_ITEMS, N_FEATS)


def make_log(rng, n):
    """Synthetic interactions: user u likes items near 1.5*u (mod N_ITEMS); popular items over-sampled."""
    users = rng.integers(0, N_USERS, size=n)
    items = (users * 3 // 2 + rng.integers(-2, 3, size=n)) % N_ITEMS
    return users, items


def bag(rng, ids, n_feats, per=3):
    flat = np.concatenate([(i * 7 + rng.integers(0, 5, size=per)) % n_feats for i in ids])
    offsets = np.arange(0, per * len(ids), per)
    return flat, offsets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "200")))
    ap.add_argument("--temperature", type=float, default=0.07)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    users_all, items_all = make_log(rng, 20000)
    counts = np.bincount(items_all, minlength=N_ITEMS).astype(np.float64) + 1.0
    item_prob = torch.tensor(counts / counts.sum(), device=dev)
    model = TwoTower().to(dev)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)

    for step in range(args.steps):
        sel = rng.integers(0, len(users_all), size=128)
        u_np, i_np = users_all[sel], items_all[sel]
        uf, uo = bag(rng, u_np, N_FEATS)
        itf, io = bag(rng, i_np, N_FEATS)
        u_ids, i_ids = torch.from_numpy(u_np).to(dev), torch.from_numpy(i_np).to(dev)
        u = model.user(u_ids, torch.from_numpy(uf).to(dev), torch.from_numpy(uo).to(dev))
        v = model.item(i_ids, torch.from_numpy(itf).to(dev), torch.from_numpy(io).to(dev))
        logits = u @ v.T / args.temperature
        logits = logits - torch.log(item_prob[i_ids])[None, :]
        labels = torch.arange(logits.size(0), device=dev)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        if step % 25 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.4f}")

    print("DTYPES weight", model.user.mlp[0].weight.dtype, "item_prob", item_prob.dtype, "logits", logits.dtype)
    model.eval()
    with torch.no_grad():
        all_items = np.arange(N_ITEMS)
        f, o = bag(rng, all_items, N_FEATS)
        cat = model.item(torch.from_numpy(all_items).to(dev), torch.from_numpy(f).to(dev), torch.from_numpy(o).to(dev))
        test_u = np.arange(0, N_USERS, 4)
        f, o = bag(rng, test_u, N_FEATS)
        q = model.user(torch.from_numpy(test_u).to(dev), torch.from_numpy(f).to(dev), torch.from_numpy(o).to(dev))
        top = (q @ cat.T).topk(args.k, dim=1).indices.cpu().numpy()
        scores = (q @ cat.T).max(dim=1).values.cpu().numpy()
    truth = (test_u * 3 // 2) % N_ITEMS
    recall = float(np.mean([t in row for t, row in zip(truth, top)]))
    print(f"recall@{args.k} {recall:.3f} best-score mean {scores.mean():.3f} {scores.dtype}")


if __name__ == "__main__":
    main()
