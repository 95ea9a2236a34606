"""Small CNN on synthetic 16x16 glyphs. `--bf16` turns on bf16 on the XLA device; metrics are
kept in double precision (under XLA_DOWNCAST_BF16 double stays fp32 on the device)."""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--bf16", action="store_true", help="bf16 on the device (fp32 for .double())")
    return ap.parse_args()


class GlyphNet(nn.Module):
    def __init__(self, classes=6):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def glyph_batch(n, gen, classes=6):
    y = torch.randint(0, classes, (n,), generator=gen)
    img = 0.3 * torch.randn(n, 1, 16, 16, generator=gen)
    for c in range(classes):
        sel = y == c
        img[sel, 0, 2 * c:2 * c + 4, :] += 1.0
    return img, y


class Meter:
    def __init__(self, device):
        self.loss_sum = torch.tensor(0.0, dtype=torch.float64, device=device)
        self.correct = torch.zeros((), dtype=torch.float64, device=device)
        self.seen = 0

    def update(self, loss, logits, y):
        self.loss_sum += loss.detach().double() * y.shape[0]
        self.correct += (logits.argmax(1) == y).double().sum()
        self.seen += y.shape[0]

    def result(self):
        return (self.loss_sum / self.seen).item(), (self.correct / self.seen).item()


def main():
    args = parse()
    if args.bf16:
        os.environ["XLA_DOWNCAST_BF16"] = "1"
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = xm.xla_device()
    model = GlyphNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    meter = Meter(device)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        x, y = glyph_batch(args.batch, gen)
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        meter.update(loss, logits, y)
        xm.mark_step()
        if step % 4 == 0:
            avg, acc = meter.result()
            print(f"step {step} avg loss {avg:.4f} acc {acc:.3f} ({time.time() - t0:.1f}s)")
    grad_norm = torch.sqrt(sum(p.grad.double().pow(2).sum() for p in model.parameters()))
    print("final grad norm", grad_norm.item())


if __name__ == "__main__":
    main()
