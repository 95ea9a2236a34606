"""Batch-hard triplet training of an embedding net (P x K batches), recall@k on a held-out gallery."""
import json
import os
from pathlib import Path

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

CFG = json.loads((Path(__file__).parent / "config.json").read_text())
N_CLASSES = 12
IN_DIM = 24


class Embedder(nn.Module):
    def __init__(self, d_in=IN_DIM, h=48, d_out=CFG["embed_dim"]):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, d_out))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def pairwise_dist(e):
    sq = (e * e).sum(dim=1)
    d2 = sq[:, None] - 2.0 * e @ e.T + sq[None, :]
    return d2.clamp(min=1e-12).sqrt()


def batch_hard_triplet(emb, labels, margin):
    d = pairwise_dist(emb)
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool, device=emb.device)
    pos_mask = (same & ~eye).float()
    hardest_pos = (d * pos_mask).max(dim=1).values
    big = d.max().detach() + 1.0
    hardest_neg = (d + big * same.float()).min(dim=1).values
    loss = F.relu(hardest_pos - hardest_neg + margin)
    frac_active = (loss > 0).float().mean()
    return loss.mean(), frac_active


def sample_pk(protos, rng, p, k, noise=0.6):
    cls = rng.choice(N_CLASSES, size=p, replace=False)
    labels = np.repeat(cls, k)
    x = protos[labels] + noise * rng.standard_normal((p * k, IN_DIM))
    return torch.tensor(x, dtype=torch.float32), torch.from_numpy(labels)


@torch.no_grad()
def recall_at_k(model, q, q_lab, g, g_lab, ks):
    qe, ge = model(q), model(g)
    sims = qe @ ge.T
    order = sims.argsort(dim=1, descending=True)[:, : max(ks)]
    hit = g_lab[order] == q_lab[:, None]
    out = {k: hit[:, :k].any(dim=1).float().mean().item() for k in ks}
    return out, order[:, 0].tolist(), sims.max(dim=1).values.cpu()


def main():
    steps = int(os.environ.get("STEPS", "300"))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    protos = rng.standard_normal((N_CLASSES, IN_DIM)) * 1.5
    dev = xm.xla_device()
    model = Embedder().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=CFG["lr"])

    for step in range(1, steps + 1):
        x, y = sample_pk(protos, rng, CFG["classes_per_batch"], CFG["per_class"])
        x, y = x.to(dev), y.to(dev)
        emb = model(x)
        loss, active = batch_hard_triplet(emb, y, CFG["margin"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} active {active.item():.3f}")

    model.eval()
    gx, gy = sample_pk(protos, rng, N_CLASSES, 3)
    qx, qy = sample_pk(protos, rng, N_CLASSES, 1)
    rec, top1, best_sim = recall_at_k(model, qx.to(dev), qy.to(dev), gx.to(dev), gy.to(dev), CFG["recall_k"])
    print("recall", {k: round(v, 3) for k, v in rec.items()}, "top1", top1[:6])
    np.save("/tmp/hunt49_best_sim.npy", best_sim.numpy())
    print("DTYPES", next(model.parameters()).dtype, emb.dtype, best_sim.dtype)


if __name__ == "__main__":
    main()
