"""Log-mel front end: a framed DFT and a mel filterbank, both built in NumPy (float64) once."""
import numpy as np
import torch
import torch.nn as nn


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(n_mels, n_fft, sr, fmin=20.0, fmax=None):
    fmax = fmax or sr / 2
    mels = np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    hz = mel_to_hz(mels)
    bins = np.fft.rfftfreq(n_fft, 1.0 / sr)
    fb = np.zeros((n_mels, bins.size))
    for i in range(n_mels):
        lo, mid, hi = hz[i], hz[i + 1], hz[i + 2]
        up = (bins - lo) / (mid - lo)
        down = (hi - bins) / (hi - mid)
        fb[i] = np.maximum(0.0, np.minimum(up, down))
    fb *= (2.0 / (hz[2:] - hz[:-2]))[:, None]
    return fb


def dft_basis(n_fft):
    n = np.arange(n_fft)
    k = np.arange(n_fft // 2 + 1)
    ang = 2 * np.pi * np.outer(n, k) / n_fft
    win = 0.5 - 0.5 * np.cos(2 * np.pi * n / n_fft)
    return win[:, None] * np.cos(ang), -win[:, None] * np.sin(ang)


class LogMel(nn.Module):
    def __init__(self, sr=8000, n_fft=128, hop=64, n_mels=20):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        cos, sin = dft_basis(n_fft)
        self.register_buffer("cos", torch.from_numpy(cos))
        self.register_buffer("sin", torch.from_numpy(sin))
        self.register_buffer("fb", torch.from_numpy(mel_filterbank(n_mels, n_fft, sr)))

    def forward(self, wav):
        frames = wav.unfold(-1, self.n_fft, self.hop)
        re = frames @ self.cos.to(frames.dtype)
        im = frames @ self.sin.to(frames.dtype)
        power = re * re + im * im
        mel = power @ self.fb.T.to(power.dtype)
        return mel.clamp(min=1e-5).log().transpose(1, 2)
