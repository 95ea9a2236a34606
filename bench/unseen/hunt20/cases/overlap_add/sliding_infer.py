"""Sliding-window denoiser inference over a long 1-D signal with Hann overlap-add."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

WIN, HOP = 256, 128


class Denoiser(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, ch, 9, padding=4), nn.Tanh(),
            nn.Conv1d(ch, ch, 9, padding=4), nn.Tanh(),
            nn.Conv1d(ch, 1, 9, padding=4),
        )

    def forward(self, x):
        return x - self.net(x)


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    t = np.arange(4096) / 4096.0
    clean = np.sin(2 * np.pi * 7 * t) + 0.3 * np.sin(2 * np.pi * 31 * t)
    noisy = clean + 0.2 * np.random.default_rng(0).normal(size=t.shape)
    sig = torch.from_numpy(noisy).float().unsqueeze(0).to(device)  # (1, L)
    L = sig.shape[1]

    model = Denoiser().to(device)
    model.eval()
    window = torch.hann_window(WIN, periodic=True, device=device)
    out = torch.zeros(1, L, device=device)
    norm = torch.zeros(1, L, device=device)
    with torch.no_grad():
        for s in range(0, L - WIN + 1, HOP):
            e = s + WIN
            seg = sig[:, s:e].unsqueeze(1)
            pred = model(seg).squeeze(1)
            out[:, s:e] += pred * window
            norm[:, s:e] += window ** 2
            xm.mark_step()
    out = out / norm.clamp_min(1e-3)
    torch_xla.sync()
    # reference metric in double precision on the host
    res = out.cpu().double().numpy()[0]
    mse_in = np.mean((noisy - clean) ** 2)
    mse_out = np.mean((res[HOP:-HOP] - clean[HOP:-HOP]) ** 2)
    print(f"mse in {mse_in:.4f} out {mse_out:.4f}")
    peak = out.abs().max()
    print("peak", peak.item(), "dtype", out.dtype)
    np.save("denoised.npy", out.cpu().numpy())


if __name__ == "__main__":
    main()
