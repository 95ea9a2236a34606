"""Keyword spotting from raw audio: STFT + mel front end inside the model, small CNN classifier."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr

SR, N_FFT, HOP, N_MELS, WORDS = 8000, 256, 128, 32, 4


def mel_filterbank(n_fft, n_mels, sr):
    hz = lambda m: 700 * (10 ** (m / 2595) - 1)
    mels = np.linspace(0, 2595 * math.log10(1 + sr / 2 / 700), n_mels + 2)
    bins = np.floor((n_fft + 1) * hz(mels) / sr).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1))
    for m in range(1, n_mels + 1):
        lo, c, hi = bins[m - 1], bins[m], bins[m + 1]
        fb[m - 1, lo:c] = (np.arange(lo, c) - lo) / max(c - lo, 1)
        fb[m - 1, c:hi] = (hi - np.arange(c, hi)) / max(hi - c, 1)
    return fb                                                               # float64


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.register_buffer("fb", torch.from_numpy(mel_filterbank(N_FFT, N_MELS, SR)).float())
        self.cnn = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(32, WORDS)

    def forward(self, wave):
        spec = torch.stft(wave, N_FFT, HOP, window=self.window, return_complex=True).abs() ** 2
        logmel = torch.log(self.fb @ spec + 1e-6)                           # (B, mels, frames)
        logmel = (logmel - logmel.mean((1, 2), keepdim=True)) / (logmel.std((1, 2), keepdim=True) + 1e-5)
        return self.fc(self.cnn(logmel[:, None]).flatten(1))


def synth(n, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(SR) / SR
    y = rng.integers(0, WORDS, n)
    f0 = np.array([300.0, 600.0, 1200.0, 2000.0])[y]
    sweep = 1 + 0.3 * rng.uniform(-1, 1, n)
    wave = np.sin(2 * np.pi * f0[:, None] * t * sweep[:, None]) * np.hanning(SR) + 0.3 * rng.normal(size=(n, SR))
    return torch.from_numpy(wave.astype(np.float32)), torch.from_numpy(y)


def parse_flags(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--bs", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    return p.parse_args(argv)


def _mp_fn(index, flags):
    device = xm.xla_device()
    torch.manual_seed(index)
    wave, y = synth(256, xr.global_ordinal())
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(wave, y), batch_size=flags.bs, shuffle=True)
    model = KWS().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=flags.lr * xr.world_size())
    for epoch in range(flags.epochs):
        correct = torch.zeros((), device=device)
        for xb, yb in pl.MpDeviceLoader(loader, device):
            logits = model(xb)
            loss = F.cross_entropy(logits, yb, label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
            correct += (logits.argmax(1) == yb).sum()
        acc = xm.mesh_reduce("acc", correct.item() / len(loader.dataset), np.mean)
        xm.master_print(f"epoch {epoch} loss {loss.item():.3f} acc {acc:.3f}")
    xm.save(model.state_dict(), "/tmp/kws.pt")
