"""Keyword spotting on synthetic tones: log-mel, SpecAugment masks, per-utterance CMVN, a small CNN."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from frontend import LogMel

SR = 8000
N_CLASSES = 5


def synth(rng, n, length=2048):
    t = np.arange(length) / SR
    labels = rng.integers(0, N_CLASSES, n)
    f0 = 300.0 * (1 + labels)
    wav = np.sin(2 * np.pi * f0[:, None] * t[None, :]) * rng.uniform(0.3, 1.0, (n, 1))
    wav += 0.05 * rng.standard_normal((n, length))
    return wav, labels


def spec_augment(x, max_f=4, max_t=6):
    """x: (B, F, T). One frequency and one time mask per utterance, made with arange comparisons."""
    B, Fb, T = x.shape
    f = torch.arange(Fb, device=x.device).view(1, Fb, 1)
    t = torch.arange(T, device=x.device).view(1, 1, T)
    fw = torch.randint(0, max_f + 1, (B, 1, 1), device=x.device)
    f0 = (torch.rand(B, 1, 1, device=x.device) * (Fb - fw)).long()
    tw = torch.randint(0, max_t + 1, (B, 1, 1), device=x.device)
    t0 = (torch.rand(B, 1, 1, device=x.device) * (T - tw)).long()
    mask = ((f >= f0) & (f < f0 + fw)) | ((t >= t0) & (t < t0 + tw))
    return x.masked_fill(mask, 0.0)


def cmvn(x, eps=1e-5):
    mean = x.mean(dim=(1, 2), keepdim=True)
    var = x.var(dim=(1, 2), keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps)


class KWS(nn.Module):
    def __init__(self, n_mels=20, h=32):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_mels, h, 5, padding=2), nn.BatchNorm1d(h), nn.ReLU(),
                                  nn.Conv1d(h, h, 5, padding=2), nn.BatchNorm1d(h), nn.ReLU())
        self.fc = nn.Linear(h, N_CLASSES)

    def forward(self, x):
        return self.fc(self.conv(x).mean(dim=-1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bs", type=int, default=8)
    args = p.parse_args()
    steps = int(os.environ.get("STEPS", "200"))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    frontend = LogMel(sr=SR).to(dev)
    model = KWS().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for step in range(1, steps + 1):
        wav, labels = synth(rng, args.bs)
        wav = torch.from_numpy(wav).float().to(dev)
        y = torch.from_numpy(labels).to(dev)
        with torch.no_grad():
            feats = cmvn(spec_augment(frontend(wav)))
        logits = model(feats)
        loss = F.cross_entropy(logits, y, label_smoothing=0.05)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        wav, labels = synth(rng, 16)
        feats = cmvn(frontend(torch.from_numpy(wav).float().to(dev)))
        probs = model(feats).softmax(-1)
        acc = (probs.argmax(-1).cpu().numpy() == labels).mean()
        mel_stats = feats.mean(dim=(0, 2)).cpu().numpy()
    print(f"eval acc {acc:.3f}", "mel mean", np.round(mel_stats[:4], 3).tolist())
    print("DTYPES", next(model.parameters()).dtype, frontend.fb.dtype, feats.dtype, mel_stats.dtype)


if __name__ == "__main__":
    main()
