import os
# Settings for the TPU runtime: bf16 everywhere
os.environ["PJRT_DEVICE"] = os.environ.get("PJRT_DEVICE", "CPU")
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
torch.manual_seed(0)
LATENT, SIDE = 6, 12
class VAE(nn.Module):
    def __init__(self, latent=LATENT, side=SIDE, hidden=96):
        super().__init__()
        self.side = side
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(side * side, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, side * side))

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h).clamp(-8, 8)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.dec(z).view(-1, 1, self.side, self.side), mu, logvar


def elbo_terms(logits, x, mu, logvar):
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(1).sum(1)
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)
    return rec, kl
def toy_digits(n, gen):
    # blobs at random positions: a stand-in for binarised MNIST
    yy, xx = torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="ij")
    cy, cx = torch.randint(3, SIDE - 3, (2, n, 1, 1), generator=gen)
    img = torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 6.0)
    return img.unsqueeze(1)

vae = VAE().to(device)
opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(0)
beta, history = 0.0, []
for step in range(10):
    raw = toy_digits(32, gen).to(device)
    x = (raw > 0.5).float()
    logits, mu, logvar = vae(x)
    rec, kl = elbo_terms(logits, x, mu, logvar)
    beta = min(1.0, beta + 0.1)
    loss = (rec + beta * kl).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    history.append((rec.mean().item(), kl.mean().item()))
print("last rec/kl", history[-1])
vae.eval()
with torch.no_grad():
    z = torch.randn(16, LATENT, device=device)
    samples = torch.sigmoid(vae.dec(z)).view(4, 4, SIDE, SIDE)
    grid = samples.permute(0, 2, 1, 3).reshape(4 * SIDE, 4 * SIDE)
    a, b = torch.randn(2, LATENT, device=device)
    t = torch.linspace(0, 1, 8, device=device)[:, None]
    path = torch.sigmoid(vae.dec(torch.lerp(a, b, t))).view(8, SIDE, SIDE)
np.save("samples.npy", (grid.cpu().numpy() * 255).astype(np.uint8))
np.save("interp.npy", path.cpu().numpy())
print("mean pixel", grid.mean().item(), "interp range", path.min().item(), path.max().item())
