"""Bernoulli VAE on synthetic 6x6 binary glyphs, with torch.distributions on the device.

Settings (the process environment included) come from a yaml file.
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import yaml
from torch.distributions import Bernoulli, Independent, Normal, kl_divergence


def apply_config(path):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    for key, value in cfg.get("env", {}).items():
        os.environ.setdefault(key, str(value))
    return cfg


class VAE(nn.Module):
    def __init__(self, pixels, latent, hidden):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(pixels, hidden), nn.Tanh(), nn.Linear(hidden, 2 * latent))
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.Tanh(), nn.Linear(hidden, pixels))

    def posterior(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        return Independent(Normal(mu, (0.5 * logvar).exp()), 1)

    def likelihood(self, z):
        return Independent(Bernoulli(logits=self.dec(z)), 1)


def glyphs(n, g):
    templates = (torch.rand(5, 36, generator=g) > 0.5).float()
    flips = (torch.rand(n, 36, generator=g) < 0.05).float()
    idx = torch.randint(0, 5, (n,), generator=g)
    return (templates[idx] + flips) % 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "conf", "train.yaml"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    cfg = apply_config(args.config)

    import torch_xla
    import torch_xla.core.xla_model as xm

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    mc, tc = cfg["model"], cfg["train"]
    data = glyphs(1024, g)

    model = VAE(mc["pixels"], mc["latent"], mc["hidden"]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=tc["lr"])
    prior = Independent(Normal(torch.zeros(mc["latent"], device=device), torch.ones(mc["latent"], device=device)), 1)

    for step in range(args.steps):
        x = data[torch.randint(0, len(data), (tc["batch"],), generator=g)].to(device)
        q = model.posterior(x)
        z = q.rsample()
        rec = model.likelihood(z).log_prob(x)
        kl = kl_divergence(q, prior)
        loss = (kl - rec).mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step} elbo {-loss.item():.4f} kl {kl.mean().item():.4f}")

    # importance-weighted bound on held-out glyphs, and samples from the prior
    model.eval()
    with torch.no_grad():
        xv = glyphs(128, g).to(device)
        q = model.posterior(xv)
        k = tc["iw_samples"]
        z = q.sample((k,))
        log_w = model.likelihood(z).log_prob(xv) + prior.log_prob(z) - q.log_prob(z)
        iw = (torch.logsumexp(log_w, dim=0) - math.log(k)).mean()
        zs = prior.sample((16,))
        means = torch.sigmoid(model.dec(zs))
        torch_xla.sync()
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "samples.npy"), means.cpu().numpy())
    with open(os.path.join(args.out, "vae.json"), "w") as f:
        json.dump({"iw_bound": iw.item(), "posterior_scale": q.base_dist.scale.mean().item()}, f)
    print(f"iw bound {iw.item():.4f}")


if __name__ == "__main__":
    main()
