"""Deep-kernel GP regression: an MLP feature map, an exact GP on a batch of points
(RBF kernel, Cholesky), trained on the marginal likelihood; posterior mean on held-out points."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class FeatureMap(nn.Module):
    def __init__(self, d_in=4, d_out=8):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 32), nn.Tanh(), nn.Linear(32, d_out))

    def forward(self, x):
        if self.training:
            # multiplicative input jitter, drawn where the input lives
            x = x * torch.empty(x.shape, device=x.device).uniform_(0.95, 1.05)
        return self.net(x)


class DeepKernelGP(nn.Module):
    def __init__(self, d_in):
        super().__init__()
        self.features = FeatureMap(d_in)
        self.log_ls = nn.Parameter(torch.tensor(0.0))
        self.log_sf = nn.Parameter(torch.tensor(0.0))
        self.log_noise = nn.Parameter(torch.tensor(-2.0))

    def kernel(self, a, b):
        d2 = (a.unsqueeze(1) - b.unsqueeze(0)).pow(2).sum(-1)
        return torch.exp(2 * self.log_sf) * torch.exp(-0.5 * d2 / torch.exp(2 * self.log_ls))

    def nll(self, x, y):
        f = self.features(x)
        n = f.shape[0]
        jitter = f.new_full((n,), 1e-3)
        K = self.kernel(f, f) + torch.diag_embed(jitter + torch.exp(self.log_noise))
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y.unsqueeze(1), L)
        fit = 0.5 * (y.unsqueeze(1) * alpha).sum()
        logdet = torch.log(torch.diagonal(L)).sum()
        return (fit + logdet) / n + 0.5 * math.log(2 * math.pi)

    @torch.no_grad()
    def posterior_mean(self, x, y, x_new):
        f, f_new = self.features(x), self.features(x_new)
        K = self.kernel(f, f)
        K = K + torch.eye(K.shape[0], device=K.device) * (torch.exp(self.log_noise) + 1e-3)
        mean_prior = f.new_zeros(())
        alpha = torch.linalg.solve(K, (y - mean_prior).unsqueeze(1))
        return (self.kernel(f_new, f) @ alpha).squeeze(1)


def target(x):
    return torch.sin(3 * x[:, 0]) * torch.cos(2 * x[:, 1]) + 0.3 * x[:, 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--inducing", type=int, default=48)
    ap.add_argument("--lr", type=float, default=0.01)
    args = ap.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    dev = torch_xla.device()
    model = DeepKernelGP(4).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step in range(1, args.steps + 1):
        model.train()
        x = torch.rand(args.inducing, 4, generator=g) * 2 - 1
        y = target(x) + 0.05 * torch.randn(args.inducing, generator=g)
        x, y = x.to(dev), y.to(dev)
        loss = model.nll(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} nll {loss.item():.4f} noise {model.log_noise.exp().item():.4f}")
    model.eval()
    x_te = torch.rand(64, 4, generator=g) * 2 - 1
    mu = model.posterior_mean(x.to(dev), y, x_te.to(dev)).cpu().numpy()
    rmse = float(np.sqrt(np.mean((mu - target(x_te).numpy()) ** 2)))
    print(f"test rmse {rmse:.4f}")


if __name__ == "__main__":
    main()
