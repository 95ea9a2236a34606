"""Classify noisy chirps/tones from raw waveforms; the log-power DFT front end lives in the model."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

SR = 2000


def make_batch(n, length, gen):
    t = torch.arange(length) / SR
    cls = torch.randint(0, 4, (n,), generator=gen)
    f0 = 100.0 + 150.0 * cls.float() + 20 * torch.rand(n, generator=gen)
    sweep = torch.where(cls % 2 == 0, torch.zeros(n), 200.0 * torch.ones(n))
    phase = 2 * math.pi * (f0[:, None] * t + 0.5 * sweep[:, None] * t ** 2)
    wav = torch.sin(phase) + 0.4 * torch.randn(n, length, generator=gen)
    return wav, cls


class LogSpec(nn.Module):
    """Log-power spectrogram as a real DFT matmul (XLA-friendly: no complex FFT on the device)."""

    def __init__(self, n_fft=128, hop=32):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        k = torch.arange(n_fft // 2 + 1)[:, None]
        n = torch.arange(n_fft)[None, :]
        ang = 2 * math.pi * k * n / n_fft
        self.register_buffer("basis", torch.cat([torch.cos(ang), -torch.sin(ang)], dim=0))

    def forward(self, wav):
        frames = wav.unfold(-1, self.n_fft, self.hop)              # (B, frames, n_fft)
        window = torch.hann_window(self.n_fft, device=wav.device)
        spec = (frames * window) @ self.basis.T                    # (B, frames, 2 * bins)
        re, im = spec.chunk(2, dim=-1)
        power = re ** 2 + im ** 2
        return torch.log(power + 1e-4).transpose(1, 2)             # (B, bins, frames)


class ToneNet(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.front = LogSpec()
        self.norm = nn.BatchNorm1d(65)
        self.conv = nn.Sequential(
            nn.Conv1d(65, 48, 3, padding=1), nn.ReLU(),
            nn.Conv1d(48, 48, 3, padding=1), nn.ReLU(),
        )
        self.head = nn.Linear(48, n_classes)

    def forward(self, wav):
        feats = self.norm(self.front(wav))
        return self.head(self.conv(feats).mean(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    device = xm.xla_device()
    model = ToneNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(args.steps):
        wav, cls = make_batch(args.batch, 1024, gen)
        wav, cls = wav.to(device), cls.to(device)
        logits = model(wav)
        loss = F.cross_entropy(logits, cls)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
