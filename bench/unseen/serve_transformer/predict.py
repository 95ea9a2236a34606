"""Score a queue of reviews with the sentiment model on the XLA device; no training here.

Writes OUT/probs.npy (n, classes), OUT/embeddings.npy (n, dim) for the retrieval index,
OUT/predictions.csv (one row per review) and OUT/summary.json.
"""

import argparse
import csv
import json
import os

import numpy as np
import torch
import torch_xla
from model import load, probabilities
from tokenizer import encode


def batches(items, size):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default="checkpoints/sentiment-small")
    parser.add_argument("--input", default="data/queue.txt")
    parser.add_argument("--out", default="predictions")
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    device = torch_xla.device()
    model, config = load(args.checkpoint)
    model.to(device).eval()
    max_len, vocab = config["model"]["max_len"], config["model"]["vocab_size"]
    labels = config["labels"]

    with open(args.input) as f:
        reviews = [line.strip() for line in f if line.strip()]

    all_probs, all_emb = [], []
    with torch.no_grad():
        for chunk in batches(reviews, args.batch_size):
            ids = torch.tensor([encode(text, vocab, max_len) for text in chunk])
            if len(chunk) < args.batch_size:  # keep one graph: pad the last batch
                ids = torch.cat([ids, ids.new_zeros(args.batch_size - len(chunk), max_len)])
            ids = ids.to(device)
            emb = model.encode(ids)
            probs = probabilities(model.head(emb))
            torch_xla.sync()
            all_probs.append(probs.cpu().numpy()[: len(chunk)])
            all_emb.append(emb.cpu().numpy()[: len(chunk)])

    probs = np.concatenate(all_probs)
    emb = np.concatenate(all_emb)
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "probs.npy"), probs)
    np.save(os.path.join(args.out, "embeddings.npy"), emb)
    with open(os.path.join(args.out, "predictions.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["row", "label", "confidence"])
        for i, p in enumerate(probs):
            writer.writerow([i, labels[int(p.argmax())], f"{p.max():.4f}"])
    counts = np.bincount(probs.argmax(axis=1), minlength=len(labels))
    summary = {
        "reviews": len(reviews),
        "counts": dict(zip(labels, counts.tolist())),
        "mean_confidence": float(probs.max(axis=1).mean()),
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
