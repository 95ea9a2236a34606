"""Embed a document corpus and a query set on the XLA device, retrieve the top-k
documents for each query by cosine similarity and write ids/scores for the service."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Tower(nn.Module):
    def __init__(self, vocab=500, dim=32, out=24):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.proj = nn.Sequential(nn.Linear(dim, 48), nn.GELU(), nn.Linear(48, out))

    def forward(self, tokens):
        return self.proj(self.emb(tokens))


def embed(tower, batches, device):
    chunks = []
    for tokens in batches:
        z = tower(tokens.to(device))
        chunks.append(F.normalize(z, dim=-1))
    return torch.cat(chunks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    tower = Tower().to(device, dtype=torch.bfloat16).eval()

    docs = torch.randint(0, 500, (256, 12))
    # queries are noisy copies of the first 64 documents: the right answer is known
    queries = docs[:64].clone()
    queries[:, ::4] = torch.randint(0, 500, (64, 3))
    with torch.no_grad():
        doc_vecs = embed(tower, docs.split(64), device)
        q_vecs = embed(tower, queries.split(32), device)
        sim = q_vecs @ doc_vecs.T
        scores, ids = sim.topk(args.k, dim=1)
        gold = torch.arange(64, device=device)
        hit = (ids == gold[:, None]).any(dim=1).to(scores.dtype)
        recall = hit.mean()
        margin = scores[:, 0] - scores[:, 1]
    xm.mark_step()
    print("doc_vecs", doc_vecs.dtype, "sim", sim.dtype, "scores", scores.dtype, "ids", ids.dtype)
    print(f"recall@{args.k} {recall.item():.4f}  mean margin {margin.mean().item():.5f}")
    print("first query top scores", [round(s, 4) for s in scores[0].cpu().tolist()])

    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "doc_vecs.npy"), doc_vecs.float().cpu().numpy())
    np.save(os.path.join(args.out, "scores.npy"), scores.float().cpu().numpy())
    with open(os.path.join(args.out, "neighbours.json"), "w") as f:
        json.dump({"ids": ids.cpu().tolist(), "recall": recall.item()}, f)
    host_scores = scores.cpu().to(torch.float32)
    print("host scores", host_scores.dtype, "first", host_scores[0, 0].item())


if __name__ == "__main__":
    main()
