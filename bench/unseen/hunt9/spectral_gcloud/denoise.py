"""1-D convolutional denoiser trained with a time-domain L1 plus a multi-resolution
spectral loss (magnitudes of framed, windowed rFFTs).

The SNR metric and its running sum are kept in double precision on purpose.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

SR = 256
RESOLUTIONS = (16, 32, 64)


def make_batch(rng, batch, length):
    t = np.arange(length) / SR
    f0 = rng.uniform(8.0, 40.0, size=(batch, 1))
    amp = rng.uniform(0.3, 1.0, size=(batch, 1))
    clean = amp * np.sin(2 * np.pi * f0 * t) + 0.3 * amp * np.sin(2 * np.pi * 3 * f0 * t)
    noisy = clean + 0.25 * rng.standard_normal(clean.shape)
    # float64 from NumPy; the model takes float32
    return torch.from_numpy(noisy).float().unsqueeze(1), torch.from_numpy(clean).float().unsqueeze(1)


class Denoiser(nn.Module):
    def __init__(self, ch=24):
        super().__init__()
        self.inp = nn.Conv1d(1, ch, 7, padding=3)
        self.blocks = nn.ModuleList(
            nn.Conv1d(ch, ch, 5, padding=2 * d, dilation=d) for d in (1, 2, 4, 8)
        )
        self.out = nn.Conv1d(ch, 1, 1)

    def forward(self, x):
        h = F.gelu(self.inp(x))
        for conv in self.blocks:
            h = h + F.gelu(conv(h))
        return x - self.out(h)  # predict the noise, subtract it


def stft_mag(x, n_fft):
    frames = x.squeeze(1).unfold(-1, n_fft, n_fft // 2)
    window = torch.hann_window(n_fft, device=x.device)
    spec = torch.fft.rfft(frames * window, dim=-1)
    # |X| through the real view: torch-xla's abs of a complex tensor has no autograd
    return torch.view_as_real(spec).pow(2).sum(-1).add(1e-9).sqrt()


def spectral_loss(pred, target):
    loss = 0.0
    for n_fft in RESOLUTIONS:
        p, t = stft_mag(pred, n_fft), stft_mag(target, n_fft)
        sc = torch.linalg.vector_norm(t - p) / torch.linalg.vector_norm(t).clamp_min(1e-6)
        mag = F.l1_loss(torch.log(p + 1e-5), torch.log(t + 1e-5))
        loss = loss + sc + mag
    return loss / len(RESOLUTIONS)


def snr_db(pred, target):
    err = (target.double() - pred.double()).pow(2).sum(-1)
    return 10.0 * torch.log10(target.double().pow(2).sum(-1) / err.clamp_min(1e-12))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--length", type=int, default=256)
    args = ap.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch_xla.device()
    model = Denoiser().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    snr_sum = torch.zeros((), dtype=torch.float64, device=device)

    for step in range(1, args.steps + 1):
        noisy, clean = make_batch(rng, args.batch, args.length)
        noisy, clean = noisy.to(device), clean.to(device)
        pred = model(noisy)
        loss = F.l1_loss(pred, clean) + spectral_loss(pred, clean)
        opt.zero_grad()
        loss.backward()
        opt.step()
        snr_sum += snr_db(pred.detach(), clean).mean()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} snr {snr_sum.item() / step:.2f} dB")

    noisy, clean = make_batch(rng, 4, args.length)
    with torch.no_grad():
        den = model(noisy.to(device))
    np.save("denoised.npy", den.cpu().numpy())


if __name__ == "__main__":
    main()
