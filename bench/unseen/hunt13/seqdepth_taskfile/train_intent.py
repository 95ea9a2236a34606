"""Intent classification of short token sequences with a deep residual MLP-mixer.

Memory: the 8 blocks are recomputed in the backward (activation checkpointing), and each is skipped
at random during training (stochastic depth). The train step is one compiled graph (torch_xla.compile).
Classes are imbalanced: the loss weights them.
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch_xla.utils.checkpoint import checkpoint

VOCAB, SEQ, N_CLASSES = 200, 16, 3
CLASS_WEIGHTS = [1.0, 2.5, 0.7]


def sinusoid(seq_len, dim, device):
    pos = torch.arange(seq_len, device=device, dtype=torch.get_default_dtype()).unsqueeze(1)
    freq = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.get_default_dtype()) * (-math.log(1e4) / dim))
    table = torch.zeros(seq_len, dim, device=device)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table


class MixerBlock(nn.Module):
    def __init__(self, seq, dim, survival):
        super().__init__()
        self.survival = survival
        self.norm1 = nn.LayerNorm(dim)
        self.token_mix = nn.Sequential(nn.Linear(seq, seq), nn.GELU())
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mix = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def residual(self, h):
        h = h + self.token_mix(self.norm1(h).transpose(1, 2)).transpose(1, 2)
        return self.channel_mix(self.norm2(h))

    def forward(self, h):
        out = self.residual(h)
        if self.training and self.survival < 1.0:
            keep = torch.bernoulli(torch.full((h.shape[0], 1, 1), self.survival, device=h.device))
            out = out * keep / self.survival
        return h + out


class IntentMixer(nn.Module):
    def __init__(self, dim=32, depth=8):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.blocks = nn.ModuleList(MixerBlock(SEQ, dim, 1.0 - 0.3 * i / (depth - 1)) for i in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, N_CLASSES)

    def forward(self, ids):
        h = self.embed(ids) + sinusoid(ids.shape[1], self.embed.embedding_dim, ids.device)
        for block in self.blocks:
            h = checkpoint(block, h) if self.training else block(h)
        return self.head(self.norm(h).mean(1))


def make_data(n, rng):
    y = rng.choice(N_CLASSES, size=n, p=[0.5, 0.15, 0.35])
    keywords = np.array([[3, 17, 42], [5, 99, 150], [8, 64, 120]])
    ids = rng.integers(10, VOCAB, size=(n, SEQ))
    slots = rng.integers(0, SEQ, size=(n, 2))
    ids[np.arange(n), slots[:, 0]] = keywords[y, rng.integers(0, 3, size=n)]
    ids[np.arange(n), slots[:, 1]] = keywords[y, rng.integers(0, 3, size=n)]
    return torch.from_numpy(ids), torch.from_numpy(y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", default="runs/dev")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    ids_tr, y_tr = make_data(4096, rng)
    ids_va, y_va = make_data(512, rng)

    device = torch_xla.device()
    model = IntentMixer().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    class_weight = torch.tensor(CLASS_WEIGHTS, device=device)

    def train_step(ids, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(ids), y, weight=class_weight, label_smoothing=0.05)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    step_fn = torch_xla.compile(train_step)
    losses = []
    for step in range(args.steps):
        idx = torch.randint(0, len(ids_tr), (args.batch,))
        loss = step_fn(ids_tr[idx].to(device), y_tr[idx].to(device))
        losses.append(loss.item())
        if step % 10 == 0:
            print(f"step {step} loss {losses[-1]:.4f}")

    model.eval()
    with torch.no_grad():
        logits = model(ids_va.to(device))
        pred = logits.argmax(1).cpu()
        per_class_recall = [float((pred[y_va == c] == c).float().mean()) for c in range(N_CLASSES)]
        val_loss = F.cross_entropy(logits, y_va.to(device), weight=class_weight).item()
    acc = xm.mesh_reduce("val_acc", float((pred == y_va).float().mean()), np.mean)
    summary = {"val_loss": val_loss, "val_acc": acc, "recall": per_class_recall, "train_loss": losses}
    print(json.dumps({k: v for k, v in summary.items() if k != "train_loss"}))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
