"""Learned Mahalanobis metric for few-shot classification: each class keeps a covariance estimated from its
support embeddings (shrunk toward the identity); queries are scored by the Mahalanobis distance computed
through a Cholesky factor (older torch API, as the project was written for torch 1.8)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

N_WAY, K_SHOT, N_QUERY, D_IN, D_EMB = 4, 6, 5, 16, 8


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(D_IN, 32), nn.ReLU(), nn.Linear(32, D_EMB))
        self.log_shrink = nn.Parameter(torch.tensor(0.0))

    def forward(self, x):
        return self.net(x)

    def class_factors(self, support):
        # support: (n_way, k_shot, d)
        mu = support.mean(1)
        centered = support - mu[:, None]
        cov = centered.transpose(1, 2) @ centered / (support.shape[1] - 1)
        lam = torch.sigmoid(self.log_shrink)
        eye = torch.eye(support.shape[-1], device=support.device).expand_as(cov)
        cov = (1 - lam) * cov + lam * eye + 1e-3 * eye
        return mu, cov.cholesky()


def mahalanobis_logits(query, mu, chol):
    diff = (query[:, None, :] - mu[None]).permute(1, 2, 0)  # (n_way, d, n_q)
    z = torch.triangular_solve(diff, chol, upper=False).solution
    return -0.5 * z.pow(2).sum(1).T  # (n_q, n_way)


def episode(gen):
    centers = torch.randn(N_WAY, D_IN, generator=gen) * 1.5
    s = centers[:, None] + torch.randn(N_WAY, K_SHOT, D_IN, generator=gen)
    yq = torch.arange(N_WAY).repeat_interleave(N_QUERY)
    q = centers[yq] + torch.randn(len(yq), D_IN, generator=gen)
    return s, q, yq


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(12)
    device = torch_xla.device()
    enc = Encoder().to(device)
    opt = torch.optim.Adam(enc.parameters(), lr=3e-3)
    for step in range(int(os.environ.get("STEPS", "12"))):
        s, q, yq = episode(gen)
        s, q, yq = s.to(device), q.to(device), yq.to(device)
        es = enc(s.view(-1, D_IN)).view(N_WAY, K_SHOT, D_EMB)
        eq = enc(q)
        mu, chol = enc.class_factors(es)
        logits = mahalanobis_logits(eq, mu, chol)
        loss = F.cross_entropy(logits, yq)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("DTYPES", "weight", enc.net[0].weight.dtype, "logits", logits.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
