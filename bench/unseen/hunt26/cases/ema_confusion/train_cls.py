"""Small CNN classifier on uint8 image batches: spectral-norm-free Lipschitz head via parametrize,
EMA weights via AveragedModel, confusion matrix and per-class loss at evaluation."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import csv
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
import torch_xla
import torch_xla.core.xla_model as xm

N_CLASSES = 6
# the switch changes what is representable on the device: pick the numerical guards to match
LOW_PRECISION = os.environ.get("XLA_USE_BF16", "0") == "1"
ADAM_EPS = 1e-6 if LOW_PRECISION else 1e-8
NORM_EPS = torch.finfo(torch.bfloat16 if LOW_PRECISION else torch.float32).eps


class RowNormalised(nn.Module):
    """Weight rows kept on the unit sphere (cosine classifier)."""

    def forward(self, w):
        return w / w.norm(dim=1, keepdim=True).clamp(min=NORM_EPS)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(64, N_CLASSES, bias=False)
        P.register_parametrization(self.head, "weight", RowNormalised())
        self.scale = 16.0

    def forward(self, x):
        f = F.normalize(self.features(x).flatten(1), dim=1)
        return self.scale * self.head(f)


def batches(rng, n_batches, bs):
    """Synthetic glyphs: class k is a bright bar at row 3k+2 on noise, as uint8."""
    for _ in range(n_batches):
        y = rng.integers(0, N_CLASSES, bs)
        img = rng.integers(0, 90, (bs, 1, 20, 20)).astype(np.uint8)
        for i, k in enumerate(y):
            img[i, 0, 3 * k + 1:3 * k + 3, :] = 230
        yield torch.from_numpy(img), torch.from_numpy(y)


def evaluate(model, device, rng):
    conf = torch.zeros(N_CLASSES * N_CLASSES, dtype=torch.long, device=device)
    loss_sum = torch.zeros(N_CLASSES, device=device)
    count = torch.zeros(N_CLASSES, device=device)
    model.eval()
    with torch.no_grad():
        for img, y in batches(rng, 8, 128):
            x = img.to(device).float() / 255.0
            y = y.to(device)
            logits = model(x)
            pred = logits.argmax(1)
            conf += torch.bincount(y * N_CLASSES + pred, minlength=N_CLASSES * N_CLASSES)
            per = F.cross_entropy(logits, y, reduction="none")
            loss_sum.scatter_add_(0, y, per)
            count.scatter_add_(0, y, torch.ones_like(per))
    model.train()
    mean_loss = torch.where(count > 0, loss_sum / count.clamp(min=1), float("nan"))
    return conf.view(N_CLASSES, N_CLASSES).cpu().numpy(), mean_loss.cpu()


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Net().to(device)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.95), use_buffers=True)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, eps=ADAM_EPS)
    for step, (img, y) in enumerate(batches(rng, 150, 64)):
        x = img.to(device).float() / 255.0
        y = y.to(device)
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update_parameters(model)
        torch_xla.sync()
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}")

    os.makedirs("out", exist_ok=True)
    report = {}
    for name, m in (("live", model), ("ema", ema.module)):
        conf, per_class = evaluate(m, device, np.random.default_rng(1))
        acc = float(np.trace(conf) / conf.sum())
        report[name] = {"acc": acc, "per_class_loss": per_class.tolist(), "confusion": conf.tolist()}
        print(name, "acc", round(acc, 4))
        fig, ax = plt.subplots(figsize=(4, 4))
        ax.imshow(conf / conf.sum(1, keepdims=True), cmap="Blues", vmin=0, vmax=1)
        ax.set_title(f"{name} acc={acc:.3f}")
        fig.savefig(f"out/confusion_{name}.png", dpi=80)
        plt.close(fig)
        with open(f"out/per_class_{name}.csv", "w", newline="") as fh:
            csv.writer(fh).writerows(enumerate(per_class.numpy().round(4)))
    with open("out/report.json", "w") as fh:
        json.dump(report, fh, indent=1)
    xm.save(ema.module.state_dict(), "out/ema.pt")


if __name__ == "__main__":
    main()
