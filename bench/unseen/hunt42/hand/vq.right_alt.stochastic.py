"""A small VQ autoencoder on synthetic signals. The codebook is not a parameter: it is a device tensor outside the
model, learnt by an exponential moving average of the encoder outputs assigned to each code (k-means style), with
dead codes re-seeded from the batch."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

STEPS = int(os.environ.get("STEPS", "20"))
K, D = 16, 8


class AE(nn.Module):
    def __init__(self, n=32, hid=48):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(n, hid), nn.ReLU(), nn.Linear(hid, D))
        self.dec = nn.Sequential(nn.Linear(D, hid), nn.ReLU(), nn.Linear(hid, n))


def quantize(z, codebook):
    dist = (z * z).sum(1, keepdim=True) - 2 * z @ codebook.T + (codebook * codebook).sum(1)
    idx = dist.argmin(1)
    return codebook[idx], idx


def main():
    dev = torch_xla.device()
    torch.manual_seed(0)
    t = torch.linspace(0, 1, 32)
    freqs = torch.rand(512, 1) * 6 + 1
    signals = torch.sin(2 * np.pi * freqs * t) + 0.05 * torch.randn(512, 32)

    model = AE().to(dev).to(torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    codebook = (torch.randn(K, D) * 0.1).to(dev, torch.bfloat16)
    cluster_size = codebook.new_zeros(K)
    embed_sum = codebook.clone()
    decay, beta = 0.95, 0.25

    for step in range(STEPS):
        x = signals[step * 16 % 512:(step * 16 % 512) + 16].to(dev).to(torch.bfloat16)
        z = model.enc(x)
        zq, idx = quantize(z, codebook)
        recon = model.dec(z + (zq - z).detach())
        loss = F.mse_loss(recon, x) + beta * F.mse_loss(z, zq.detach())
        opt.zero_grad()
        loss.backward()
        opt.step()

        with torch.no_grad():
            onehot = F.one_hot(idx, K).type(z.dtype)
            cluster_size.mul_(decay).add_(onehot.sum(0), alpha=1 - decay)
            embed_sum.mul_(decay).add_(onehot.T @ z.detach(), alpha=1 - decay)
            n = cluster_size.sum()
            smoothed = (cluster_size + 1e-5) / (n + K * 1e-5) * n
            codebook.copy_(embed_sum / smoothed.unsqueeze(1))
            dead = (cluster_size < 1e-3).unsqueeze(1)
            codebook.copy_(torch.where(dead, z.detach()[:K], codebook))
        torch_xla.sync()
        usage = torch.bincount(idx.cpu(), minlength=K).numpy()
        print(f"step {step} loss {loss.item():.5f} used {(usage > 0).sum()}/{K}")

    print("DTYPES", model.enc[0].weight.dtype, codebook.dtype, cluster_size.dtype)
    np.save(os.environ.get("VQ_OUT", "/tmp/hunt42_codebook.npy"), codebook.float().cpu().numpy())


if __name__ == "__main__":
    main()
