"""Self-labelling: encode a batch on the device, cluster the embeddings with a
hand-written NumPy k-means, then train the encoder to predict its clusters
(logits against the centroids, which come back to the device)."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

ap = argparse.ArgumentParser()
ap.add_argument("--clusters", type=int, default=6)
ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "20")))
args = ap.parse_args()

dev = torch_xla.device()
torch.manual_seed(21)
rng = np.random.default_rng(21)


def kmeans(z, k, iters=10):
    cent = z[rng.choice(len(z), k, replace=False)]
    for _ in range(iters):
        d = ((z[:, None, :] - cent[None]) ** 2).sum(-1)
        assign = d.argmin(1)
        for j in range(k):
            if (assign == j).any():
                cent[j] = z[assign == j].mean(0)
    return cent, assign


def cosine_topk(q, base, k=3):
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    bn = base / np.linalg.norm(base, axis=1, keepdims=True)
    return np.argsort(-qn @ bn.T, axis=1)[:, :k]


encoder = nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 16)).to(dev)
opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
data = torch.randn(256, 40) + torch.repeat_interleave(torch.randn(8, 40) * 2, 32, dim=0)

for step in range(args.steps):
    xb = data[torch.randperm(256)[:128]].to(dev)
    with torch.no_grad():
        z = F.normalize(encoder(xb), dim=1).cpu().numpy()
    cent, assign = kmeans(z.astype(np.float64), args.clusters)
    cent_t = torch.from_numpy(cent).to(dev)
    target = torch.from_numpy(assign).to(dev)
    emb = F.normalize(encoder(xb), dim=1)
    logits = emb @ F.normalize(cent_t, dim=1).T / 0.1
    loss = F.cross_entropy(logits, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f} sizes {np.bincount(assign, minlength=args.clusters).tolist()}")

with torch.no_grad():
    base = encoder(data.to(dev)).cpu().numpy()
nn_idx = cosine_topk(base[:5], base)
print("neighbours", nn_idx.tolist())
print("DTYPES", encoder[0].weight.dtype, z.dtype, cent_t.dtype, logits.dtype)
