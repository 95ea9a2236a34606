"""ZCA-whitened features -> linear probe. Data arrives as float64 (scientific pipeline), covariance is
accumulated in float64 on purpose, eigh runs on the accumulated covariance."""
import os

os.environ |= {"XLA_DOWNCAST_BF16": "1", "PJRT_DEVICE": "NEURON"}

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

D, C, N = 24, 5, 2048


def make_data(rng):
    mix = rng.standard_normal((D, D)) * np.linspace(0.1, 3.0, D)
    centers = rng.standard_normal((C, D)) * 2.0
    y = rng.integers(0, C, N)
    x = (centers[y] + rng.standard_normal((N, D))) @ mix.T
    return x, y  # x float64, y int64


class CovAccumulator:
    def __init__(self, dim, device):
        self.n = 0
        self.s = torch.zeros(dim, device=device, dtype=torch.float64)
        self.ss = torch.zeros(dim, dim, device=device, dtype=torch.float64)

    def update(self, xb):
        xb = xb.double()
        self.n += xb.shape[0]
        self.s += xb.sum(0)
        self.ss += xb.T @ xb

    def finalize(self):
        mean = self.s / self.n
        cov = self.ss / self.n - torch.outer(mean, mean)
        return mean, cov


def zca(mean, cov, eps=1e-3):
    evals, evecs = torch.linalg.eigh(cov.float())
    w = evecs @ torch.diag(torch.rsqrt(evals.clamp_min(0) + eps)) @ evecs.T
    return mean.float(), w


class Probe(nn.Module):
    def __init__(self, mean, w):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("w", w)
        self.fc = nn.Linear(D, C)

    def forward(self, x):
        x = x.to(self.w.dtype)
        z = (x - self.mean) @ self.w
        return self.fc(z)


def main():
    device = torch_xla.device()
    rng = np.random.default_rng(0)
    x_np, y_np = make_data(rng)
    x_all = torch.from_numpy(x_np)
    y_all = torch.from_numpy(y_np)

    acc = CovAccumulator(D, device)
    for i in range(0, N, 256):
        acc.update(x_all[i:i + 256].to(device))
    mean, cov = acc.finalize()
    mean, w = zca(mean, cov)
    white = ((x_all[:512].to(device).float() - mean) @ w).double()
    off = (white.T @ white / 512 - torch.eye(D, device=device, dtype=torch.float64)).abs().max()
    print("whitening residual", off.item())

    model = Probe(mean, w).to(device)
    opt = torch.optim.SGD(model.fc.parameters(), lr=0.2, momentum=0.9)
    perm = torch.randperm(N)
    for epoch in range(3):
        total = torch.zeros((), device=device, dtype=torch.float64)
        for i in range(0, N, 128):
            idx = perm[i:i + 128]
            xb = x_all[idx].to(device)
            yb = y_all[idx].to(device)
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach().double() * xb.shape[0]
            xm.mark_step()
        print(f"epoch {epoch} loss {(total / N).item():.4f}")

    model.eval()
    with torch.no_grad():
        logits = model(x_all.to(device))
        pred = logits.argmax(1).cpu().numpy()
        probs = logits.softmax(-1).cpu().numpy()
    acc_ = (pred == y_np).mean()
    print("accuracy", acc_, "probs", probs.dtype, probs[:2].round(3))
    np.savez("zca.npz", w=model.w.cpu().numpy(), mean=model.mean.cpu().numpy(), evals=torch.linalg.eigvalsh(cov.float()).cpu().numpy())


if __name__ == "__main__":
    main()
