"""Class-conditional DDPM on a 2-D toy (three Gaussian blobs), classifier-free guidance, EMA, sampling at the end."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

T_STEPS = 50
N_CLASSES = 3


def make_schedule(device, t_steps=T_STEPS):
    betas = np.linspace(1e-4, 0.05, t_steps, dtype=np.float64)
    alphas = 1.0 - betas
    alphas_cumprod = np.cumprod(alphas)
    sched = {
        "betas": betas,
        "alphas": alphas,
        "alphas_cumprod": alphas_cumprod,
        "sqrt_ac": torch.tensor(np.sqrt(alphas_cumprod), device=device),
        "sqrt_1m_ac": torch.tensor(np.sqrt(1.0 - alphas_cumprod), device=device),
    }
    return sched


def extract(a, t, ndim):
    out = a.gather(0, t).float()
    return out.reshape(-1, *([1] * (ndim - 1)))


class TimeEmbed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.proj = nn.Linear(dim, dim)

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
        ang = t.float()[:, None] * freqs[None]
        return self.proj(torch.cat([ang.sin(), ang.cos()], dim=1))


class Denoiser(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.temb = TimeEmbed(hidden)
        self.cemb = nn.Embedding(N_CLASSES + 1, hidden)  # last id = "no condition"
        self.inp = nn.Linear(2, hidden)
        self.mid = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 2))

    def forward(self, x, t, y):
        return self.mid(self.inp(x) + self.temb(t) + self.cemb(y))


def sample_data(rng, n):
    centers = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    y = rng.integers(0, N_CLASSES, size=n)
    x = centers[y] + 0.3 * rng.standard_normal((n, 2))
    return x, y


@torch.no_grad()
def sample(model, sched, y, guidance, device):
    x = torch.randn(len(y), 2, device=device)
    null = torch.full_like(y, N_CLASSES)
    for i in reversed(range(T_STEPS)):
        t = torch.full_like(y, i)
        eps_c = model(x, t, y)
        eps_u = model(x, t, null)
        eps = (1 + guidance) * eps_c - guidance * eps_u
        beta = float(sched["betas"][i])
        coef = beta / math.sqrt(1.0 - sched["alphas_cumprod"][i])
        x = (x - coef * eps) / math.sqrt(sched["alphas"][i])
        if i > 0:
            x = x + math.sqrt(beta) * torch.randn_like(x)
        xm.mark_step()
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "300")))
    ap.add_argument("--guidance", type=float, default=2.0)
    ap.add_argument("--p-uncond", type=float, default=0.1)
    ap.add_argument("--ema-decay", type=float, default=0.99)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    sched = make_schedule(device)
    model = Denoiser().to(device)
    ema = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.0)

    for step in range(args.steps):
        x_np, y_np = sample_data(rng, 64)
        x0 = torch.from_numpy(x_np).float().to(device)
        y = torch.from_numpy(y_np).to(device)
        drop = torch.rand(y.shape[0], device=device) < args.p_uncond
        y = torch.where(drop, torch.full_like(y, N_CLASSES), y)
        t = torch.randint(0, T_STEPS, (x0.shape[0],), device=device)
        noise = torch.randn_like(x0)
        x_t = extract(sched["sqrt_ac"], t, x0.ndim) * x0 + extract(sched["sqrt_1m_ac"], t, x0.ndim) * noise
        loss = F.mse_loss(model(x_t, t, y), noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(ema, list(model.parameters()), 1.0 - args.ema_decay)
        xm.mark_step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.5f}")

    print("DTYPES weight", model.inp.weight.dtype, "sqrt_ac", sched["sqrt_ac"].dtype, "x_t", x_t.dtype, "ema", ema[0].dtype)
    # evaluate with the EMA weights swapped in
    backup = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for p, e in zip(model.parameters(), ema):
            p.copy_(e)
    y_eval = torch.arange(N_CLASSES, device=device).repeat_interleave(8)
    xs = sample(model, sched, y_eval, args.guidance, device)
    with torch.no_grad():
        for p, b in zip(model.parameters(), backup):
            p.copy_(b)
    pts = xs.cpu().numpy()
    means = np.stack([pts[y_eval.cpu().numpy() == c].mean(0) for c in range(N_CLASSES)])
    print("class means", np.round(means, 2).tolist(), pts.dtype)
    np.save(os.path.join(os.environ.get("OUT_DIR", "/tmp"), "ddpm_samples.npy"), pts)


if __name__ == "__main__":
    main()
