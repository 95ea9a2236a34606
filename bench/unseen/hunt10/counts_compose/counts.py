"""Store-day demand counts: negative-binomial regression over bag-of-item embeddings with
per-sample weights, a one-hot weekday and a masked attention pool over promotions."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N_ITEMS, N_PROMO, DAYS = 200, 16, 7


class DemandNet(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.items = nn.EmbeddingBag(N_ITEMS, d, mode="sum")
        self.promo = nn.Embedding(N_PROMO + 1, d, padding_idx=0)
        self.score = nn.Linear(d, 1)
        self.mlp = nn.Sequential(nn.Linear(2 * d + DAYS, 64), nn.GELU(), nn.Linear(64, 2))

    def forward(self, item_ids, offsets, item_w, weekday, promos):
        bag = self.items(item_ids, offsets, per_sample_weights=item_w)
        p = self.promo(promos)                                # (B, P, d)
        logits = self.score(p).squeeze(-1)                    # (B, P)
        neg = torch.finfo(logits.dtype).min
        logits = logits.masked_fill(promos == 0, neg)
        att = torch.softmax(logits, dim=-1)
        att = torch.where(promos.sum(-1, keepdim=True) == 0, 0.0, att)
        pooled = (att.unsqueeze(-1) * p).sum(1)
        day = F.one_hot(weekday, DAYS).float()
        out = self.mlp(torch.cat([bag, pooled, day], dim=-1))
        log_mu, log_r = out.unbind(-1)
        return log_mu, log_r.clamp(-4.0, 6.0)


def nb_nll(y, log_mu, log_r):
    mu, r = log_mu.exp(), log_r.exp()
    log_p = (torch.lgamma(y + r) - torch.lgamma(r) - torch.lgamma(y + 1)
             + r * (log_r - torch.logaddexp(log_r, log_mu))
             + y * (log_mu - torch.logaddexp(log_r, log_mu)))
    return -log_p.mean()


def make_batch(rng, b):
    lens = rng.integers(1, 6, size=b)
    ids = rng.integers(0, N_ITEMS, size=lens.sum())
    w = rng.uniform(0.5, 2.0, size=lens.sum())          # float64
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
    weekday = rng.integers(0, DAYS, size=b)
    promos = rng.integers(0, N_PROMO + 1, size=(b, 4)) * (rng.random((b, 4)) < 0.4)
    y = rng.poisson(2.0 + lens + 3 * (weekday >= 5)).astype(np.float64)
    return ids, offsets, w, weekday, promos, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = DemandNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(args.steps):
        ids, offsets, w, weekday, promos, y = make_batch(rng, 48)
        ids = torch.from_numpy(ids).to(device)
        offsets = torch.from_numpy(offsets).to(device)
        w = torch.from_numpy(w).float().to(device)
        weekday = torch.from_numpy(weekday).to(device)
        promos = torch.from_numpy(promos).to(device)
        y = torch.tensor(y, device=device)                  # float64 counts
        log_mu, log_r = model(ids, offsets, w, weekday, promos)
        loss = nb_nll(y, log_mu, log_r)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        xm.master_print(f"step {step} nb-nll {loss.item():.4f}")

    model.eval()
    ids, offsets, w, weekday, promos, y = make_batch(rng, 64)
    with torch.no_grad():
        log_mu, _ = model(torch.from_numpy(ids).to(device), torch.from_numpy(offsets).to(device),
                          torch.from_numpy(w).float().to(device), torch.from_numpy(weekday).to(device),
                          torch.from_numpy(promos).to(device))
        mu = log_mu.exp()
        dev = 2 * (torch.xlogy(torch.tensor(y, device=device), torch.tensor(y, device=device) / mu)
                   - (torch.tensor(y, device=device) - mu))
    torch_xla.sync()
    print("poisson deviance", round(dev.mean().item(), 4), "mean mu", round(mu.mean().item(), 3))
    print("first forecasts", np.round(mu[:5].cpu().numpy(), 2).tolist())


if __name__ == "__main__":
    main()
