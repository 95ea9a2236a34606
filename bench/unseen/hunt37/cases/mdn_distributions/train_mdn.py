"""Mixture density network on a 1-D inverse problem (x given y is multi-modal).

The head predicts K mixture weights, means and scales; the loss is the negative
log-likelihood of a MixtureSameFamily; a prior Normal regularises the means.
"""
import os

os.environ["XLA_USE_BF16"] = "1"

import math

import torch
import torch.nn as nn
import torch.distributions as D
import torch_xla

K = 5
STEPS = int(os.environ.get("STEPS", "30"))


class MDNHead(nn.Module):
    def __init__(self, hidden=64, k=K):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, k)
        self.mu = nn.Linear(hidden, k)
        self.log_sigma = nn.Linear(hidden, k)

    def forward(self, y):
        h = self.trunk(y)
        sigma = torch.exp(self.log_sigma(h).clamp(-6.0, 3.0))
        return self.pi(h), self.mu(h), sigma


def mixture(logits, mu, sigma):
    comp = D.Normal(mu, sigma)
    mix = D.Categorical(logits=logits)
    return D.MixtureSameFamily(mix, comp)


def make_batch(n, gen):
    x = torch.rand(n, 1, generator=gen) * 10.0 - 5.0
    noise = torch.randn(n, 1, generator=gen) * 0.3
    y = x + 0.3 * torch.sin(1.7 * x) + noise
    return y, x


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    dev = torch_xla.device()
    model = MDNHead().to(dev)
    prior = D.Normal(torch.tensor(0.0, device=dev), torch.tensor(5.0, device=dev))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    for step in range(STEPS):
        y, x = make_batch(256, gen)
        y, x = y.to(dev), x.to(dev)
        logits, mu, sigma = model(y)
        dist = mixture(logits, mu, sigma)
        nll = -dist.log_prob(x.squeeze(-1)).mean()
        reg = -prior.log_prob(mu).mean() * 1e-3
        loss = nll + reg
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")

    model.eval()
    with torch.no_grad():
        grid = torch.linspace(-5.0, 5.0, 11, device=dev).unsqueeze(-1)
        logits, mu, sigma = model(grid)
        dist = mixture(logits, mu, sigma)
        draws = dist.component_distribution.rsample((64,))
        pick = torch.multinomial(torch.softmax(logits, -1), 64, replacement=True).T
        samples = torch.gather(draws, 2, pick.unsqueeze(-1)).squeeze(-1)
        mean_pred = (torch.softmax(logits, -1) * mu).sum(-1)
        nll_grid = -dist.log_prob(grid.squeeze(-1) * 0.0).mean()
    host_samples = samples.cpu()
    host_mean = mean_pred.cpu().numpy()
    print("mean prediction", [round(float(v), 3) for v in host_mean])
    print("sample spread", float(host_samples.std()), "nll at 0", nll_grid.item())
    print("entropy bound", math.log(K))
    print("DTYPES weight", model.mu.weight.dtype, "loss", loss.dtype, "samples", host_samples.dtype,
          "mean", host_mean.dtype, "prior loc", prior.loc.dtype)


if __name__ == "__main__":
    main()
