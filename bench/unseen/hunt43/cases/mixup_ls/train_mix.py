"""Small CNN classifier with mixup / cutmix (lambdas from np.random.beta), hand-written label smoothing and a
poly-1 cross-entropy whose log is clamped at torch.finfo(dtype).eps."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

N_CLASSES = 5


def synth(rng, n):
    y = rng.integers(0, N_CLASSES, size=n)
    x = rng.normal(0, 1, size=(n, 3, 16, 16)).astype(np.float32)
    for c in range(N_CLASSES):
        x[y == c, c % 3, 2 * c:2 * c + 4, :] += 2.0
    return x, y


def smooth_one_hot(y, n, eps, device):
    off = eps / (n - 1)
    t = torch.full((y.size(0), n), off, device=device)
    t.scatter_(1, y.unsqueeze(1), 1.0 - eps)
    return t


def poly1_soft_ce(logits, target, epsilon=1.0):
    probs = logits.softmax(dim=-1)
    logp = torch.log(probs.clamp(min=torch.finfo(probs.dtype).eps))
    ce = -(target * logp).sum(dim=-1)
    pt = (target * probs).sum(dim=-1)
    return (ce + epsilon * (1 - pt)).mean()


def cutmix_box(h, w, lam, rng):
    r = np.sqrt(1.0 - lam)
    ch, cw = int(h * r), int(w * r)
    cy, cx = rng.integers(0, h), rng.integers(0, w)
    y1, y2 = np.clip(cy - ch // 2, 0, h), np.clip(cy + ch // 2, 0, h)
    x1, x2 = np.clip(cx - cw // 2, 0, w), np.clip(cx + cw // 2, 0, w)
    return y1, y2, x1, x2


class Net(nn.Module):
    def __init__(self, ch=24):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.BatchNorm2d(ch), nn.ReLU(),
                               nn.Conv2d(ch, ch, 3, stride=2, padding=1), nn.BatchNorm2d(ch), nn.ReLU(),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(ch, N_CLASSES)

    def forward(self, x):
        return self.fc(self.f(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "200")))
    ap.add_argument("--alpha", type=float, default=0.4)
    ap.add_argument("--cutmix-prob", type=float, default=0.5)
    ap.add_argument("--smoothing", type=float, default=0.1)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    np.random.seed(0)
    dev = xm.xla_device()
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    for step in range(args.steps):
        xb, yb = synth(rng, 32)
        x = torch.from_numpy(xb).to(dev)
        y = torch.from_numpy(yb).to(dev)
        target = smooth_one_hot(y, N_CLASSES, args.smoothing, dev)
        lam = np.random.beta(args.alpha, args.alpha)
        perm = torch.randperm(x.size(0), device=dev)
        if np.random.rand() < args.cutmix_prob:
            y1, y2, x1, x2 = cutmix_box(x.size(2), x.size(3), lam, rng)
            x[:, :, y1:y2, x1:x2] = x[perm][:, :, y1:y2, x1:x2]
            lam = 1.0 - (y2 - y1) * (x2 - x1) / (x.size(2) * x.size(3))
        else:
            x = lam * x + (1 - lam) * x[perm]
        target = lam * target + (1 - lam) * target[perm]
        logits = model(x)
        loss = poly1_soft_ce(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        if step % 25 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.4f} lam {float(lam):.3f}")
    print("DTYPES weight", model.fc.weight.dtype, "x", x.dtype, "target", target.dtype, "logits", logits.dtype,
          "eps", torch.finfo(logits.dtype).eps)
    model.eval()
    xe, ye = synth(rng, 256)
    with torch.no_grad():
        pred = model(torch.from_numpy(xe).to(dev)).argmax(dim=1).cpu().numpy()
    print(f"accuracy {(pred == ye).mean():.3f}")


if __name__ == "__main__":
    main()
