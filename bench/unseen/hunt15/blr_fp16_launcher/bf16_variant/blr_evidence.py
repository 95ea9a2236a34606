"""Bayesian linear regression on random Fourier features; the noise and prior precisions are fitted by
maximising the log evidence (Cholesky, triangular solves, log-determinant) on the XLA device."""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch_xla


def features(x, omega, phase):
    return math.sqrt(2.0 / omega.shape[1]) * torch.cos(x @ omega + phase)


def log_evidence(Phi, y, log_alpha, log_beta):
    n, d = Phi.shape
    alpha, beta = log_alpha.exp(), log_beta.exp()
    A = alpha * torch.eye(d, device=Phi.device) + beta * Phi.T @ Phi
    L = torch.linalg.cholesky(A)
    b = beta * Phi.T @ y
    m = torch.cholesky_solve(b.unsqueeze(-1), L).squeeze(-1)
    fit = beta * (y - Phi @ m).pow(2).sum() + alpha * m.pow(2).sum()
    logdet = 2.0 * torch.log(torch.diagonal(L)).sum()
    ev = 0.5 * (d * log_alpha + n * log_beta - fit - logdet - n * math.log(2 * math.pi))
    return ev, m, L, A


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x_np = rng.uniform(-3, 3, size=(200, 1))
    y_np = np.sin(2 * x_np[:, 0]) + 0.3 * x_np[:, 0] + rng.normal(scale=0.2, size=200)
    device = torch_xla.device()
    x = torch.tensor(x_np, dtype=torch.float32, device=device)
    y = torch.tensor(y_np, dtype=torch.float32, device=device)
    omega = torch.randn(1, 64).to(device) * 1.5
    phase = (2 * math.pi * torch.rand(64)).to(device)
    Phi = features(x, omega, phase)

    log_alpha = torch.zeros((), device=device, requires_grad=True)
    log_beta = torch.zeros((), device=device, requires_grad=True)
    opt = torch.optim.Adam([log_alpha, log_beta], lr=0.1)
    for step in range(args.steps):
        ev, _, _, _ = log_evidence(Phi, y, log_alpha, log_beta)
        loss = -ev / len(y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step} -evidence/n {loss.item():.5f} noise std {log_beta.exp().rsqrt().item():.4f}")

    with torch.no_grad():
        ev, m, L, A = log_evidence(Phi, y, log_alpha, log_beta)
        xs = torch.linspace(-3.5, 3.5, 50, device=device).unsqueeze(-1)
        Ps = features(xs, omega, phase)
        mean = Ps @ m
        V = torch.linalg.solve_triangular(L, Ps.T, upper=False)
        var = V.pow(2).sum(0) + 1.0 / log_beta.exp()
        sign, logdet_check = torch.linalg.slogdet(A)
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "pred.npy"), torch.stack([mean, var.sqrt()]).cpu().numpy())
    with open(os.path.join(args.out, "blr.json"), "w") as f:
        json.dump({"log_evidence": ev.item(), "alpha": log_alpha.exp().item(), "beta": log_beta.exp().item(), "logdet": logdet_check.item()}, f)
    print(f"log evidence {ev.item():.3f}")


if __name__ == "__main__":
    main()
