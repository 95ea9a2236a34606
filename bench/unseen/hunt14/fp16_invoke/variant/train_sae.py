"""Sparse autoencoder (dictionary learning) on synthetic activations.

Run in half precision on the TPU (XLA_DOWNCAST_FP16, set below): the Adam epsilon and the
reconstruction-loss accumulator are chosen for that. Decoder atoms are renormalised after every
step; the codes of a held-out set are cached in float16 for the analysis notebook.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

os.environ.setdefault("XLA_DOWNCAST_FP16", "1")  # half precision on the TPU (was in tasks.py)

HALF_PRECISION = os.environ.get("XLA_DOWNCAST_FP16", "0") == "1" or os.environ.get("XLA_USE_FP16", "0") == "1"
ADAM_EPS = 1e-4 if HALF_PRECISION else 1e-8


class SparseAE(nn.Module):
    def __init__(self, d=32, atoms=96):
        super().__init__()
        self.enc = nn.Linear(d, atoms)
        self.dec = nn.Parameter(torch.randn(d, atoms) / d ** 0.5)
        self.pre_bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        codes = F.relu(self.enc(x - self.pre_bias))
        return codes @ self.dec.t() + self.pre_bias, codes

    @torch.no_grad()
    def renorm(self):
        self.dec.div_(self.dec.norm(dim=0, keepdim=True).clamp_min(1e-6))


def activations(n, seed, d=32, true_atoms=64, k=4):
    rng = np.random.default_rng(seed)
    dic = rng.normal(size=(true_atoms, d))
    dic /= np.linalg.norm(dic, axis=1, keepdims=True)
    idx = rng.integers(0, true_atoms, size=(n, k))
    coef = rng.exponential(1.0, size=(n, k))
    return np.einsum("nk,nkd->nd", coef, dic[idx]).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--l1", type=float, default=3e-3)
    ap.add_argument("--out", default="codes.npy")
    args = ap.parse_args()
    device = xm.xla_device()
    torch.manual_seed(0)
    model = SparseAE().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, eps=ADAM_EPS)
    data = torch.from_numpy(activations(4096, seed=0))
    print(f"half precision: {HALF_PRECISION}, adam eps {ADAM_EPS}")
    recon_sum = torch.zeros((), dtype=torch.float64, device=device)
    for step in range(args.steps):
        xb = data[torch.randint(0, data.shape[0], (128,))].to(device)
        recon, codes = model(xb)
        mse = F.mse_loss(recon, xb)
        loss = mse + args.l1 * codes.abs().sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        model.renorm()
        recon_sum += mse.detach().double()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} l0 {(codes > 0).float().sum(-1).mean().item():.2f}")
    print(f"mean recon {(recon_sum / args.steps).item():.6f}")
    held = torch.from_numpy(activations(512, seed=1)).to(device)
    with torch.no_grad():
        _, codes = model(held)
        cache = codes.half().cpu().numpy()
    np.save(args.out, cache)
    print(f"cached codes {cache.dtype} {cache.shape}, dead atoms {(cache.max(0) == 0).sum()}")


if __name__ == "__main__":
    main()
