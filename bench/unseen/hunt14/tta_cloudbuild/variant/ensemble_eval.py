"""Evaluate an ensemble of spectra classifiers with test-time augmentation.

Members are trained elsewhere and stored as CPU checkpoints (stand-ins are made here when missing).
Writes per-sample probabilities, calibration numbers and histograms for the dashboard.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from metrics_log import MetricWriter

N_CLS = 4


class SpectraNet(nn.Module):
    def __init__(self, length=64):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                  nn.Conv1d(8, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(4))
        self.fc = nn.Linear(64, N_CLS)

    def forward(self, x):
        if not x.is_floating_point():
            raise TypeError(f"SpectraNet expects floating spectra, got {x.dtype}")
        return self.fc(self.conv(x.unsqueeze(1)).flatten(1))


def make_members(k):
    for i in range(k):
        path = f"member{i}.pt"
        if not os.path.exists(path):
            torch.manual_seed(40 + i)
            net = SpectraNet()
            opt = torch.optim.Adam(net.parameters(), lr=3e-3)
            x, y = spectra(512, seed=100 + i)
            for _ in range(40):
                loss = F.cross_entropy(net(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            torch.save(net.state_dict(), path)


def load_member(path, device):
    net = SpectraNet()
    net.load_state_dict(torch.load(path, map_location="cpu"))
    return net.to(device).eval()


def spectra(n, seed, length=64, noise=0.3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, N_CLS, n)
    grid = np.linspace(0, 1, length)
    peaks = 0.2 + 0.2 * y[:, None]
    x = np.exp(-((grid[None] - peaks) ** 2) / 0.01) + noise * rng.normal(size=(n, length))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--out", default="eval_report.json")
    ap.add_argument("--abstain", type=float, default=0.5)
    args = ap.parse_args()
    device = xm.xla_device()
    make_members(args.members)
    members = [load_member(f"member{i}.pt", device) for i in range(args.members)]
    x_cpu, y_cpu = spectra(256, seed=5, noise=1.2)
    writer = MetricWriter("eval_metrics.json")
    all_probs, all_y = [], []
    torch.manual_seed(0)
    with torch.no_grad():
        for b, start in enumerate(range(0, len(y_cpu), 64)):
            x = x_cpu[start:start + 64].to(device)
            views = [x, torch.flip(x, dims=[-1]).flip(-1), x + 0.01 * torch.randn_like(x)]
            logits = torch.stack([m(v) for m in members for v in views]).mean(0)
            probs = F.softmax(logits, dim=-1)
            entropy = -(probs * probs.clamp_min(1e-8).log()).sum(-1)
            writer.add_scalar("batch_entropy", entropy.mean(), step=b)
            writer.add_histogram("confidence", probs.max(-1).values, step=b)
            all_probs.append(probs)
            all_y.append(y_cpu[start:start + 64])
            xm.mark_step()
            print(f"batch {b} mean entropy {entropy.mean().item():.4f}")
    probs = torch.cat(all_probs)
    y = torch.cat(all_y)
    conf, pred = probs.max(-1)
    pred = torch.where(conf > args.abstain, pred, torch.tensor(-1, device=device)).cpu()
    covered = pred >= 0
    acc = (pred[covered] == y[covered]).float().mean().item() if covered.any() else float("nan")
    nll = F.nll_loss(probs.clamp_min(1e-8).log().cpu(), y).item()
    report = {
        "accuracy_covered": acc,
        "coverage": covered.float().mean().item(),
        "nll": nll,
        "probs": probs.cpu().tolist()[:8],
        "prob_dtype": str(probs.cpu().dtype),
    }
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    writer.close()
    print(f"acc(covered) {acc:.4f} coverage {report['coverage']:.3f} nll {nll:.4f}")


if __name__ == "__main__":
    main()
