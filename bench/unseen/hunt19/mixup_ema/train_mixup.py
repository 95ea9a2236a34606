"""Small CNN on synthetic 16x16 images: mixup/cutmix, grad accumulation, warmup LambdaLR, EMA teacher."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.tensorboard import SummaryWriter

ACCUM = 2
STEPS = 8
N_CLS = 5


class SmallCNN(nn.Module):
    def __init__(self, n_cls):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.head = nn.Linear(32, n_cls)

    def forward(self, x):
        x = F.relu(self.bn(self.c1(x)))
        x = F.relu(self.c2(x))
        return self.head(x.mean(dim=(2, 3)))


def cutmix(x, y, alpha=1.0):
    lam = np.random.beta(alpha, alpha)
    idx = torch.randperm(x.size(0), device=x.device)
    h, w = x.shape[2:]
    ch, cw = int(h * np.sqrt(1 - lam)), int(w * np.sqrt(1 - lam))
    cy, cx = np.random.randint(h), np.random.randint(w)
    y0, y1 = max(cy - ch // 2, 0), min(cy + ch // 2, h)
    x0, x1 = max(cx - cw // 2, 0), min(cx + cw // 2, w)
    box = torch.zeros(1, 1, h, w, device=x.device)
    box[..., y0:y1, x0:x1] = 1.0
    x = x * (1 - box) + x[idx] * box
    lam = 1.0 - (y1 - y0) * (x1 - x0) / (h * w)
    return x, y, y[idx], lam


def mixup(x, y, alpha=0.4):
    lam = np.random.beta(alpha, alpha)
    idx = torch.randperm(x.size(0), device=x.device)
    return lam * x + (1 - lam) * x[idx], y, y[idx], lam


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    device = torch_xla.device()
    model = SmallCNN(N_CLS).to(device)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
    writer = SummaryWriter("out/tb")
    images = torch.randn(64, 3, 16, 16)
    labels = torch.randint(0, N_CLS, (64,))

    model.train()
    for step in range(STEPS):
        for micro in range(ACCUM):
            sl = slice((step * ACCUM + micro) % 4 * 16, (step * ACCUM + micro) % 4 * 16 + 16)
            x, y = images[sl].to(device), labels[sl].to(device)
            aug = cutmix if micro % 2 else mixup
            x, ya, yb, lam = aug(x, y)
            out = model(x)
            loss = lam * F.cross_entropy(out, ya) + (1 - lam) * F.cross_entropy(out, yb)
            (loss / ACCUM).backward()
        xm.optimizer_step(opt)
        opt.zero_grad()
        sched.step()
        ema.update_parameters(model)
        writer.add_scalar("train/loss", loss, step)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.3f}")

    ema.eval()
    with torch.no_grad():
        x, y = images.to(device), labels.to(device)
        acc = (ema(x).argmax(-1) == y).float().mean()
        conf = F.softmax(ema(x), dim=-1).max(-1).values.mean()
    print(f"ema acc {acc.item():.3f} conf {conf.item():.3f}")
    writer.close()


if __name__ == "__main__":
    main()
