"""Concrete autoencoder: pick K of D input features with a Gumbel-softmax selector whose
temperature is annealed on a log grid, reconstruct all D features from the K picked ones,
and compare the reconstruction error with a PCA baseline computed in NumPy float64."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

D, K, LATENT = 32, 6, 6


def synthetic(n, rng):
    z = rng.normal(size=(n, LATENT))
    mix = rng.normal(size=(LATENT, D))
    return z @ mix + 0.1 * rng.normal(size=(n, D))


class ConcreteAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.select_logits = nn.Parameter(torch.zeros(K, D))
        nn.init.normal_(self.select_logits, std=0.01)
        self.decoder = nn.Sequential(nn.Linear(K, 64), nn.GELU(), nn.Linear(64, D))

    def forward(self, x, tau):
        w = F.gumbel_softmax(self.select_logits, tau=tau, hard=False, dim=-1)
        return self.decoder(x @ w.T)

    def hard_select(self, x):
        idx = self.select_logits.argmax(-1)
        return self.decoder(x[:, idx]), idx


def pca_error(X, k):
    Xc = X - X.mean(0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    rec = Xc @ vt[:k].T @ vt[:k]
    return float(((rec - Xc) ** 2).mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = synthetic(4096, rng)
    mu, sd = X.mean(0), X.std(0)
    Xs = ((X - mu) / sd).astype(np.float32)
    device = torch_xla.device()
    model = ConcreteAE().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    taus = torch.logspace(math.log10(2.0), -1.0, args.steps, device=device)
    for step in range(args.steps):
        xb = torch.from_numpy(Xs[rng.integers(0, len(Xs), 256)]).to(device)
        loss = F.mse_loss(model(xb, taus[step]), xb)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} tau {taus[step].item():.3f} mse {loss.item():.4f}")

    with torch.no_grad():
        rec, idx = model.hard_select(torch.from_numpy(Xs).to(device))
        err = ((rec - torch.from_numpy(Xs).to(device)) ** 2).mean(0)
    err = err.cpu().numpy()
    baseline = pca_error(Xs.astype(np.float64), K)
    picked = sorted(set(idx.cpu().tolist()))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "selection.npz"), per_feature_mse=err, picked=np.array(picked),
             logits=model.select_logits.detach().cpu().numpy())
    print(f"selected {picked} mse {err.mean():.4f} ({err.dtype}) vs PCA-{K} {baseline:.4f}: ratio {err.mean() / baseline:.2f}")


if __name__ == "__main__":
    main()
