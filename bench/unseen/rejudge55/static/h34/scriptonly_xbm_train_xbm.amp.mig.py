"""Metric learning with a cross-batch memory (XBM): embeddings of past batches stay in a
ring buffer on the device and serve as extra positives and negatives."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class CrossBatchMemory:
    def __init__(self, size, dim, device):
        self.feats = torch.zeros(size, dim, device=device)
        self.labels = torch.full((size,), -1, dtype=torch.long, device=device)
        self.size = size
        self.ptr = 0

    @torch.no_grad()
    def enqueue(self, emb, y):
        b = emb.shape[0]
        self.feats[self.ptr:self.ptr + b] = emb.detach()
        self.labels[self.ptr:self.ptr + b] = y
        self.ptr = (self.ptr + b) % self.size


def contrastive(emb, y, ref, ref_y, margin=0.4):
    sim = emb @ ref.t()
    valid = (ref_y[None, :] >= 0).float()
    pos = (y[:, None] == ref_y[None, :]).float() * valid
    neg = (1.0 - pos) * valid
    pos_loss = ((1.0 - sim) * pos).sum() / pos.sum().clamp(min=1.0)
    neg_loss = (F.relu(sim - margin) * neg).sum() / neg.sum().clamp(min=1.0)
    return pos_loss + neg_loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mem", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    centers = torch.randn(8, 24) * 2.0
    encoder = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 16)).to(device)
    opt = torch.optim.SGD(encoder.parameters(), lr=0.05, momentum=0.9)
    memory = CrossBatchMemory(args.mem, 16, device)
    for step in range(args.steps):
        y = torch.randint(0, 8, (32,))
        x = centers[y] + torch.randn(32, 24)
        x, y = x.to(device), y.to(device)
        with torch.autocast("xla", dtype=torch.bfloat16):
            emb = F.normalize(encoder(x), dim=1)
            ref = torch.cat([emb, memory.feats])
            ref_y = torch.cat([y, memory.labels])
            loss = contrastive(emb, y, ref, ref_y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        memory.enqueue(emb, y)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES emb", emb.dtype, "bank", memory.feats.dtype, "ref", ref.dtype, "loss", loss.dtype)
    hit = (memory.labels >= 0).float().mean()
    print(f"memory filled {hit.item():.2f}")


if __name__ == "__main__":
    main()
