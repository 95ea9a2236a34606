"""Fine-tune a bag-of-words intent classifier on top of pretrained word vectors.

The vectors and the class prior come from NumPy (float64) files written by the
preprocessing step; the embedding table is trained with a smaller LR.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

VOCAB, DIM, CLASSES = 500, 48, 6
STEPS = int(os.environ.get("STEPS", "30"))


def ensure_assets(rng):
    if not os.path.exists("vectors.npy"):
        np.save("vectors.npy", rng.normal(0.0, 0.3, size=(VOCAB, DIM)))
        counts = rng.integers(20, 200, size=CLASSES).astype(np.float64)
        np.save("prior.npy", counts / counts.sum())


class IntentNet(nn.Module):
    def __init__(self, vectors, prior):
        super().__init__()
        self.emb = nn.EmbeddingBag.from_pretrained(vectors, freeze=False, mode="mean")
        self.register_buffer("log_prior", torch.log(prior))
        self.mlp = nn.Sequential(nn.Linear(DIM, 64), nn.ReLU(), nn.Linear(64, CLASSES))

    def forward(self, tokens, offsets):
        h = self.emb(tokens, offsets)
        return self.mlp(h.float()) + self.log_prior


def batch(rng, n=64):
    lengths = rng.integers(3, 12, size=n)
    labels = rng.integers(0, CLASSES, size=n)
    toks = [rng.integers(lab * 80, lab * 80 + 80, size=k) for lab, k in zip(labels, lengths)]
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return (torch.from_numpy(np.concatenate(toks)), torch.from_numpy(offsets),
            torch.from_numpy(labels))


def main():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    ensure_assets(rng)
    vectors = torch.from_numpy(np.load("vectors.npy"))
    prior = torch.from_numpy(np.load("prior.npy"))
    dev = torch_xla.device()
    model = IntentNet(vectors, prior).to(dev)
    opt = torch.optim.AdamW([
        {"params": model.emb.parameters(), "lr": 1e-4},
        {"params": model.mlp.parameters(), "lr": 2e-3},
    ], weight_decay=0.01)

    for step in range(STEPS):
        tokens, offsets, labels = batch(rng)
        tokens, offsets, labels = tokens.to(dev), offsets.to(dev), labels.to(dev)
        logits = model(tokens, offsets)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")

    model.eval()
    with torch.no_grad():
        tokens, offsets, labels = batch(rng, 256)
        logits = model(tokens.to(dev), offsets.to(dev))
        probs = torch.softmax(logits, -1).cpu().numpy()
    acc = float((probs.argmax(1) == labels.numpy()).mean())
    drift = (model.emb.weight.detach().cpu() - vectors).norm().item()
    np.save("finetuned_vectors.npy", model.emb.weight.detach().cpu().numpy())
    print(f"accuracy {acc:.3f} embedding drift {drift:.4f}")
    print("DTYPES emb", model.emb.weight.dtype, "mlp", model.mlp[0].weight.dtype, "loss", loss.dtype,
          "probs", probs.dtype, "prior", model.log_prior.dtype)


if __name__ == "__main__":
    main()
