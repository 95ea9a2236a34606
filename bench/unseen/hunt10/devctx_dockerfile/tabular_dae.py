"""Denoising autoencoder for mixed tabular data (numeric + categorical), built directly on the
XLA device with `with torch.device(...)`; swap-noise corruption, masked reconstruction losses,
embeddings exported for a downstream model."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N_NUM, CARDS = 6, (5, 12, 3)


class DAE(nn.Module):
    def __init__(self, d=48):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(c, 8) for c in CARDS)
        d_in = N_NUM + 8 * len(CARDS)
        self.enc = nn.Sequential(nn.Linear(d_in, d), nn.SiLU(), nn.Linear(d, d), nn.SiLU())
        self.num_head = nn.Linear(d, N_NUM)
        self.cat_heads = nn.ModuleList(nn.Linear(d, c) for c in CARDS)
        self.register_buffer("num_scale", torch.ones(N_NUM))   # made on the surrounding device

    def encode(self, num, cat):
        e = [emb(cat[:, i]) for i, emb in enumerate(self.embs)]
        return self.enc(torch.cat([num / self.num_scale] + e, dim=1))

    def forward(self, num, cat):
        h = self.encode(num, cat)
        return self.num_head(h), [head(h) for head in self.cat_heads]


def swap_noise(num, cat, p, gen):
    b = num.shape[0]
    mask = torch.rand(num.shape, generator=gen, device=num.device) < p
    perm = torch.randperm(b, generator=gen, device=num.device)
    num_c = torch.where(mask, num[perm], num)
    cmask = torch.rand(cat.shape, generator=gen, device=cat.device) < p
    cat_c = torch.where(cmask, cat[perm], cat)
    return num_c, cat_c, mask.float()


def make_table(rng, n):
    cat = np.stack([rng.integers(0, c, size=n) for c in CARDS], 1)
    num = rng.normal(size=(n, N_NUM)) + cat[:, :1] * 0.5
    return num.astype(np.float32), cat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    num_np, cat_np = make_table(rng, 384)
    with torch.device(device):
        model = DAE()
        model.num_scale.copy_(torch.tensor(num_np.std(0)))
        weights = torch.tensor([1.0, 0.5, 2.0])           # per-categorical loss weights
        gen = torch.Generator(device="cpu").manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    num_all = torch.from_numpy(num_np).to(device)
    cat_all = torch.from_numpy(cat_np).to(device)
    step = 0
    for epoch in range(args.epochs):
        for i in range(0, 384, 64):
            num, cat = num_all[i:i + 64], cat_all[i:i + 64]
            num_c, cat_c, mask = swap_noise(num.cpu(), cat.cpu(), 0.15, gen)
            num_c, cat_c, mask = num_c.to(device), cat_c.to(device), mask.to(device)
            num_hat, cat_logits = model(num_c, cat_c)
            rec = ((num_hat - num) ** 2 * (1 + 2 * mask)).mean()
            ce = sum(w * F.cross_entropy(lg, cat[:, j]) for j, (w, lg) in enumerate(zip(weights, cat_logits)))
            loss = rec + ce
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
            torch_xla.sync()
            xm.master_print(f"epoch {epoch} step {step} rec {rec.item():.4f} ce {ce.item():.4f}")
            step += 1
    model.eval()
    with torch.no_grad():
        z = model.encode(num_all, cat_all)
    torch_xla.sync()
    emb = z.cpu().numpy()
    np.save("dae_embeddings.npy", emb)
    print("embeddings", emb.dtype, emb.shape, "mean", float(emb.mean()))


if __name__ == "__main__":
    main()
