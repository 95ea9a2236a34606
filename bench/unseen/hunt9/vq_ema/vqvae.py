"""VQ-VAE on small synthetic images with an EMA-updated codebook (no codebook
loss: the codebook follows exponential moving averages of the assigned encodings).
"""
import os

XLA_ENV = dict(XLA_USE_BF16="1", XLA_TENSOR_ALLOCATOR_MAXSIZE="100000000")
os.environ.update(XLA_ENV)

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class EMAQuantizer(nn.Module):
    def __init__(self, codes=32, dim=16, decay=0.95, eps=1e-5, beta=0.25):
        super().__init__()
        self.codes, self.decay, self.eps, self.beta = codes, decay, eps, beta
        self.embedding = nn.Embedding(codes, dim)
        self.embedding.weight.data.normal_()
        self.embedding.weight.requires_grad_(False)
        self.register_buffer("cluster_size", torch.zeros(codes))
        self.register_buffer("ema_w", self.embedding.weight.data.clone())

    def forward(self, z):
        b, c, h, w = z.shape
        flat = z.permute(0, 2, 3, 1).reshape(-1, c)
        codebook = self.embedding.weight
        dist = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ codebook.t()
                + codebook.pow(2).sum(1))
        idx = dist.argmin(1)
        onehot = torch.zeros(idx.shape[0], self.codes, device=z.device)
        onehot.scatter_(1, idx.unsqueeze(1), 1)
        quant = (onehot @ codebook).view(b, h, w, c).permute(0, 3, 1, 2)

        if self.training:
            with torch.no_grad():
                self.cluster_size.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
                n = self.cluster_size.sum()
                size = (self.cluster_size + self.eps) / (n + self.codes * self.eps) * n
                self.ema_w.mul_(self.decay).add_(onehot.t() @ flat, alpha=1 - self.decay)
                self.embedding.weight.copy_(self.ema_w / size.unsqueeze(1))

        commit = self.beta * F.mse_loss(z, quant.detach())
        quant = z + (quant - z).detach()
        probs = onehot.mean(0)
        perplexity = torch.exp(-(probs * torch.log(probs + 1e-10)).sum())
        return quant, commit, perplexity


class VQVAE(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, dim, 4, 2, 1))
        self.vq = EMAQuantizer(dim=dim)
        self.dec = nn.Sequential(nn.ConvTranspose2d(dim, 32, 4, 2, 1), nn.ReLU(),
                                 nn.ConvTranspose2d(32, 1, 4, 2, 1))

    def forward(self, x):
        q, commit, ppl = self.vq(self.enc(x))
        return self.dec(q), commit, ppl


def blobs(gen, n, size=16):
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    cy = torch.randint(3, size - 3, (n, 1, 1), generator=gen)
    cx = torch.randint(3, size - 3, (n, 1, 1), generator=gen)
    r2 = (yy - cy) ** 2 + (xx - cx) ** 2
    return torch.exp(-r2 / 8.0).unsqueeze(1)


def main(steps=12):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    model = VQVAE().to(device)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=2e-3)
    for step in range(1, steps + 1):
        x = blobs(gen, 32).to(device)
        recon, commit, ppl = model(x)
        loss = F.mse_loss(recon, x) + commit
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} perplexity {ppl.item():.2f} "
              f"used {(model.vq.cluster_size > 0.01).sum().item()}")


if __name__ == "__main__":
    main()
