"""OpenAI-style evolution strategies on a small classifier: no backward pass.

Antithetic Gaussian perturbations of the flat parameter vector, centred-rank fitness shaping,
the search gradient handed to Adam through p.grad.
"""
import argparse
import pickle
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters
import torch_xla.core.xla_model as xm


def make_data(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    w = torch.randn(8, 3, generator=g)
    y = (x @ w + 0.3 * torch.randn(n, 3, generator=g)).argmax(1)
    return x, y


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 3))

    def forward(self, x):
        return self.body(x)


def centred_ranks(f):
    ranks = torch.argsort(torch.argsort(f)).float()
    return ranks / (f.numel() - 1) - 0.5


def fitness(model, x, y):
    with torch.no_grad():
        return -F.cross_entropy(model(x), y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--pop", type=int, default=8)
    ap.add_argument("--sigma", type=float, default=0.05)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()

    torch.manual_seed(0)
    device = xm.xla_device()
    x, y = make_data(512)
    x, y = x.to(device), y.to(device)

    model = Policy().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    history = []
    for step in range(args.steps):
        base = parameters_to_vector(model.parameters()).detach().clone()
        half = torch.randn(args.pop // 2, base.numel(), device=device)
        eps = torch.cat([half, -half])
        scores = []
        for e in eps:
            vector_to_parameters(base + args.sigma * e, model.parameters())
            scores.append(fitness(model, x, y))
        vector_to_parameters(base, model.parameters())
        scores = torch.stack(scores)
        weights = centred_ranks(scores)
        grad = -(weights @ eps) / (args.pop * args.sigma)
        offset = 0
        for p in model.parameters():
            n = p.numel()
            p.grad = grad[offset:offset + n].view_as(p).clone()
            offset += n
        opt.step()
        opt.zero_grad(set_to_none=True)
        xm.mark_step()
        f = fitness(model, x, y)
        history.append({"step": step, "fitness": f.cpu(), "spread": scores.std().cpu()})
        print(f"step {step} fitness {f.item():.4f}")

    out = Path(args.out)
    out.mkdir(exist_ok=True)
    with open(out / "es_history.pkl", "wb") as fh:
        pickle.dump(history, fh)
    final = parameters_to_vector(model.parameters()).detach().cpu()
    with open(out / "es_theta.pkl", "wb") as fh:
        pickle.dump({"theta": final, "pop": args.pop}, fh)
    acc = (model(x).argmax(1) == y).float().mean()
    print(f"final accuracy {acc.item():.3f} |theta| {final.norm():.3f}")


if __name__ == "__main__":
    main()
