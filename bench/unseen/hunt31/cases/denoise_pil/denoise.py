"""Tiny convolutional denoiser; writes a before/after PNG grid and a loss curve."""
import os

os.environ["XLA_USE_BF16"] = "1"

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
from PIL import Image
import torch_xla.core.xla_model as xm
from torch.utils.checkpoint import checkpoint_sequential


def blobs(n, gen):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, 24), torch.linspace(-1, 1, 24), indexing="ij")
    c = torch.rand(n, 2, 1, 1, generator=gen) * 1.2 - 0.6
    return torch.exp(-((xx - c[:, :1]) ** 2 + (yy - c[:, 1:]) ** 2) * 8)


def main():
    device = xm.xla_device()
    gen = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(16, 1, 3, padding=1)).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    losses = []
    for step in range(20):
        clean = blobs(8, gen).to(device)
        noisy = clean + 0.2 * torch.randn_like(clean)
        out = noisy - checkpoint_sequential(net, 2, noisy, use_reentrant=False)
        loss = (out - clean).abs().mean()
        opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
        losses.append(loss.detach())
    with torch.no_grad():
        den = (noisy - net(noisy)).clamp(0, 1)
    grid = torch.cat([noisy.clamp(0, 1), den, clean], dim=3)[:4, 0]
    img = (grid.reshape(-1, grid.shape[-1]) * 255).byte().cpu().numpy()
    Image.fromarray(img).save("denoise.png")
    curve = torch.stack(losses).cpu()
    plt.plot(curve.numpy()); plt.yscale("log"); plt.savefig("loss.png")
    torch.save({"final": den[:4], "losses": losses}, "samples.pt")
    print("DTYPES", den.dtype, curve.dtype, torch.load("samples.pt")["final"].dtype, torch.load("samples.pt")["losses"][0].dtype)


if __name__ == "__main__":
    main()
