"""Bag-of-embeddings text classifier: a frozen "pretrained" embedding table loaded from a float64 numpy
array, mask-weighted mean pooling over padded token ids, a trainable projection + classifier, label-smoothed
cross-entropy. Evaluation writes per-class accuracy and the pooled sentence vectors to numpy."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

VOCAB, DIM, CLASSES, PAD = 200, 24, 4, 0
MAXLEN = 12
STEPS = 10


def pretrained_table(seed=3):
    r = np.random.default_rng(seed)
    table = r.standard_normal((VOCAB, DIM)) / np.sqrt(DIM)  # float64, as np.load would give it
    table[PAD] = 0.0
    return table


class BagClassifier(nn.Module):
    def __init__(self, table):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(torch.from_numpy(table), freeze=True, padding_idx=PAD)
        self.proj = nn.Linear(DIM, 32)
        self.cls = nn.Linear(32, CLASSES)

    def pool(self, ids):
        mask = (ids != PAD).unsqueeze(-1).float()
        e = self.emb(ids)
        summed = (e * mask).sum(1)
        return summed / mask.sum(1).clamp(min=1.0)

    def forward(self, ids):
        v = self.pool(ids)  # float64, as the table is
        return self.cls(F.gelu(self.proj(v.float()))), v


def make_batch(rng, n):
    ys = rng.integers(0, CLASSES, n)
    ids = np.zeros((n, MAXLEN), dtype=np.int64)
    for i, y in enumerate(ys):
        length = rng.integers(3, MAXLEN + 1)
        lo = 1 + y * (VOCAB // CLASSES - 1)
        toks = rng.integers(lo, lo + 60, length)
        ids[i, :length] = np.clip(toks, 1, VOCAB - 1)
    return torch.from_numpy(ids), torch.from_numpy(ys)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = BagClassifier(pretrained_table()).to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-2, weight_decay=0.01)
    for step in range(STEPS):
        ids, y = make_batch(rng, 32)
        ids, y = ids.to(dev), y.to(dev)
        logits, _ = model(ids)
        loss = F.cross_entropy(logits, y, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()

    model.eval()
    ids, y = make_batch(rng, 64)
    with torch.no_grad():
        logits, vecs = model(ids.to(dev))
        pred = logits.argmax(-1).cpu()
    correct = np.zeros(CLASSES)
    seen = np.zeros(CLASSES)
    for c in range(CLASSES):
        sel = y == c
        seen[c] = int(sel.sum())
        correct[c] = int((pred[sel] == c).sum())
    print("per-class acc", np.round(correct / np.maximum(seen, 1), 3))
    sent = vecs.cpu().numpy()
    print("sentence vec norm", float(np.linalg.norm(sent, axis=1).mean()), sent.dtype)


if __name__ == "__main__":
    main()
