"""Two-tower retrieval on precomputed float64 features (dict dataset, default collate), InfoNCE, recall@k eval."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, Dataset


class PairFeatures(Dataset):
    def __init__(self, n, dim, seed):
        rng = np.random.default_rng(seed)
        self.doc = rng.normal(size=(n, dim))  # float64
        self.query = self.doc @ rng.normal(size=(dim, dim)) * 0.2 + rng.normal(size=(n, dim)) * 0.5
        self.pop = np.log1p(rng.poisson(3.0, size=n)).astype(np.float64)

    def __len__(self):
        return len(self.doc)

    def __getitem__(self, i):
        return {"query": self.query[i], "doc": self.doc[i], "pop": self.pop[i], "idx": i}


class Tower(nn.Module):
    def __init__(self, dim, out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 64), nn.LayerNorm(64), nn.SiLU(), nn.Linear(64, out))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class TwoTower(nn.Module):
    def __init__(self, dim, out=32):
        super().__init__()
        self.q = Tower(dim, out)
        self.d = Tower(dim, out)
        self.logit_scale = nn.Parameter(torch.tensor(np.log(1 / 0.07)))

    def forward(self, q, d):
        return self.q(q), self.d(d)


def info_nce(qe, de, scale, pop):
    logits = qe @ de.T * scale.exp() - 0.1 * pop[None, :]
    target = torch.arange(len(qe), device=qe.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    train = DataLoader(PairFeatures(256, 24, 0), batch_size=32, shuffle=True)
    model = TwoTower(24).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    for epoch in range(args.epochs):
        model.train()
        for batch in train:
            q = batch["query"].float().to(device)
            d = batch["doc"].float().to(device)
            pop = batch["pop"].to(device)
            qe, de = model(q, d)
            loss = info_nce(qe, de, model.logit_scale, pop.float())
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
        print(f"epoch {epoch} loss {loss.item():.4f} scale {model.logit_scale.exp().item():.2f}")

    # eval: embed the whole corpus, recall@k
    model.eval()
    test = DataLoader(PairFeatures(128, 24, 1), batch_size=64)
    qs, ds = [], []
    with torch.no_grad():
        for batch in test:
            qe, de = model(batch["query"].float().to(device), batch["doc"].float().to(device))
            qs.append(qe)
            ds.append(de)
        qall, dall = torch.cat(qs), torch.cat(ds)
        sim = qall @ dall.T
        top = torch.topk(sim, k=5, dim=-1).indices
        gold = torch.arange(len(qall), device=device)[:, None]
        for k in (1, 5):
            recall = (top[:, :k] == gold).any(-1).float().mean()
            print(f"recall@{k} {recall.item():.3f}")
        rank = (sim > sim.gather(1, gold)).sum(-1).float() + 1
        mrr = (1.0 / rank).mean()
    torch_xla.sync()
    print(f"mrr {mrr.item():.3f}")
    np.save("out_doc_emb.npy", dall.cpu().numpy())


if __name__ == "__main__":
    main()
