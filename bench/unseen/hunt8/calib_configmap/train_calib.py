"""MLP classifier with calibration metrics kept on the device and a checkpoint per run."""
import argparse
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

N_BINS = 10


class CalibrationMeter:
    """Running reliability-diagram sums on the device (no host sync per step)."""

    def __init__(self, device, n_bins=N_BINS):
        self.edges = torch.linspace(0.0, 1.0, n_bins + 1, device=device)[1:-1]
        self.conf_sum = torch.zeros(n_bins, device=device)
        self.acc_sum = torch.zeros(n_bins, device=device)
        self.count = torch.zeros(n_bins, device=device)
        self.n_bins = n_bins

    @torch.no_grad()
    def update(self, logits, target):
        conf, pred = F.softmax(logits, dim=-1).max(dim=-1)
        idx = torch.bucketize(conf, self.edges)
        correct = (pred == target).float()
        self.conf_sum += torch.bincount(idx, weights=conf, minlength=self.n_bins)
        self.acc_sum += torch.bincount(idx, weights=correct, minlength=self.n_bins)
        self.count += torch.histc(conf, bins=self.n_bins, min=0.0, max=1.0)

    def ece(self):
        total = self.count.sum().clamp_min(1.0)
        gap = (self.acc_sum - self.conf_sum).abs()
        return gap.sum() / total

    def summary(self):
        return {"ece": float(self.ece()), "count": self.count.cpu().tolist(),
                "acc": (self.acc_sum / self.count.clamp_min(1.0)).cpu().tolist()}


def make_data(n, gen):
    x = torch.randn(n, 12, generator=gen)
    w = torch.randn(12, 4, generator=gen)
    y = (x @ w + 0.5 * torch.randn(n, 4, generator=gen)).argmax(-1)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--out", default="/tmp/calib_out")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    device = xm.xla_device()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(2)
    x_all, y_all = make_data(512, gen)
    model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    meter = CalibrationMeter(device)

    for step in range(args.steps):
        idx = torch.randint(0, 512, (32,), generator=gen)
        x, y = x_all[idx].to(device), y_all[idx].to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        meter.update(logits.detach(), y)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} ece {meter.ece():.4f}", flush=True)

    stats = meter.summary()
    with open(os.path.join(args.out, "calibration.json"), "w") as fh:
        json.dump(stats, fh, indent=1)
    xm.save({"model": model.state_dict(), "bins": meter.count, "step": args.steps},
            os.path.join(args.out, "last.pt"))
    print("ece", stats["ece"])


if __name__ == "__main__":
    main()
