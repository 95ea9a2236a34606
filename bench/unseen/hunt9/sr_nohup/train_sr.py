"""x2 super-resolution: bilinear upsampling plus a learned residual.

The input normaliser keeps running statistics of the low-resolution images; an
edge (Sobel) loss is ramped in by a weight held on the device. The trained weights
are saved, loaded into a fresh model and evaluated (PSNR, and a sample to .npy).
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class RunningNorm(nn.Module):
    def __init__(self, ch, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("mean", torch.zeros(1, ch, 1, 1))
        self.register_buffer("var", torch.ones(1, ch, 1, 1))
        self.register_buffer("seen", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                m = self.momentum
                self.mean.mul_(1 - m).add_(x.mean((0, 2, 3), keepdim=True), alpha=m)
                self.var.mul_(1 - m).add_(x.var((0, 2, 3), keepdim=True), alpha=m)
                self.seen += 1
        return (x - self.mean) / (self.var + 1e-5).sqrt()


class SR(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.norm = RunningNorm(1)
        self.body = nn.Sequential(
            nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, 4, 3, padding=1), nn.PixelShuffle(2),
        )

    def forward(self, lr):
        up = F.interpolate(lr, scale_factor=2, mode="bilinear", align_corners=False)
        return up + self.body(self.norm(lr))


def sobel(img):
    kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], device=img.device)
    k = torch.stack([kx, kx.t()]).unsqueeze(1)
    g = F.conv2d(img, k, padding=1)
    return g.pow(2).sum(1, keepdim=True).add(1e-6).sqrt()


def make_pair(gen, n, size=32):
    u = torch.linspace(0, 1, size)
    fx = torch.rand(n, 1, 1, 1, generator=gen) * 6 + 1
    fy = torch.rand(n, 1, 1, 1, generator=gen) * 6 + 1
    hr = 0.5 + 0.5 * torch.sin(fx * 6.28 * u.view(1, 1, 1, -1)) * torch.cos(fy * 6.28 * u.view(1, 1, -1, 1))
    lr = F.avg_pool2d(hr, 2)
    return lr, hr


def psnr(pred, target):
    mse = F.mse_loss(pred.clamp(0, 1), target)
    return 10 * torch.log10(1.0 / mse)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--ckpt", default="ckpt/sr.pt")
    ap.add_argument("--edge-ramp", type=int, default=6)
    args = ap.parse_args()

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = xm.xla_device()
    model = SR().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    edge_w = torch.zeros((), device=device)

    for step in range(1, args.steps + 1):
        lr, hr = make_pair(gen, 16)
        lr, hr = lr.to(device), hr.to(device)
        edge_w.fill_(min(1.0, step / args.edge_ramp))
        pred = model(lr)
        loss = F.l1_loss(pred, hr) + 0.1 * edge_w * F.l1_loss(sobel(pred), sobel(hr))
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} edge_w {edge_w.item():.2f}")

    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    xm.save(model.state_dict(), args.ckpt)

    evaluator = SR().to(device)
    evaluator.load_state_dict(torch.load(args.ckpt))
    evaluator.eval()
    lr, hr = make_pair(gen, 8)
    with torch.no_grad():
        pred = evaluator(lr.to(device))
        score = psnr(pred, hr.to(device))
    print(f"eval psnr {score.item():.2f} dB (running-norm updates: {int(evaluator.norm.seen)})")
    np.save(os.path.join(os.path.dirname(args.ckpt) or ".", "sample.npy"), pred[0, 0].cpu().numpy())


if __name__ == "__main__":
    main()
