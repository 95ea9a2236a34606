"""Single-image super-resolution (ESPCN-style residual net over bicubic upsampling) on synthetic textures."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def random_textures(n, size, gen):
    """Sum of a few oriented sinusoids per image, values in [0, 1]."""
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    imgs = torch.zeros(n, 1, size, size)
    for _ in range(4):
        freq = torch.rand(n, 1, 1, 1, generator=gen) * 12 + 2
        theta = torch.rand(n, 1, 1, 1, generator=gen) * math.pi
        phase = torch.rand(n, 1, 1, 1, generator=gen) * 2 * math.pi
        imgs += torch.sin(2 * math.pi * freq * (xx * torch.cos(theta) + yy * torch.sin(theta)) + phase)
    return (imgs - imgs.amin(dim=(2, 3), keepdim=True)) / (imgs.amax(dim=(2, 3), keepdim=True) - imgs.amin(dim=(2, 3), keepdim=True))


class SRNet(nn.Module):
    def __init__(self, scale, channels=32, n_layers=4):
        super().__init__()
        self.scale = scale
        layers = [nn.Conv2d(1, channels, 5, padding=2), nn.PReLU(channels)]
        for _ in range(n_layers - 2):
            layers += [nn.Conv2d(channels, channels, 3, padding=1), nn.PReLU(channels)]
        layers += [nn.Conv2d(channels, scale * scale, 3, padding=1)]
        self.body = nn.Sequential(*layers)
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, lr):
        base = F.interpolate(lr, scale_factor=self.scale, mode="bicubic", align_corners=False)
        return base + self.shuffle(self.body(lr))


def degrade(hr, scale):
    return F.interpolate(hr, scale_factor=1 / scale, mode="area")


def psnr_np(sr, hr):
    mse = np.mean((np.clip(sr, 0.0, 1.0) - hr) ** 2, axis=(1, 2, 3))
    return 10.0 * np.log10(1.0 / np.maximum(mse, 1e-10))


def evaluate(model, hr_val, scale, device):
    model.eval()
    psnrs, bicubic = [], []
    with torch.inference_mode():
        for i in range(0, hr_val.shape[0], 32):
            hr = hr_val[i:i + 32].to(device)
            lr = degrade(hr, scale)
            sr = model(lr)
            up = F.interpolate(lr, scale_factor=scale, mode="bicubic", align_corners=False)
            hr_np = hr.cpu().numpy()
            psnrs.append(psnr_np(sr.cpu().numpy(), hr_np))
            bicubic.append(psnr_np(up.cpu().numpy(), hr_np))
            # the worst reconstructed tiles, to inspect later
            err = (sr - hr).pow(2).mean(dim=(1, 2, 3))
            worst = torch.topk(err, k=3).indices
    model.train()
    psnr = xm.mesh_reduce("psnr", float(np.concatenate(psnrs).mean()), np.mean)
    base = xm.mesh_reduce("bicubic", float(np.concatenate(bicubic).mean()), np.mean)
    return psnr, base, (worst + i).tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=2)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--patch", type=int, default=48)
    ap.add_argument("--out", default="sr.pt")
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()

    device = torch_xla.device()
    gen = torch.Generator().manual_seed(xr.global_ordinal())
    model = SRNet(args.scale).to(device)
    if args.resume:
        model.load_state_dict(torch.load(args.resume))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, args.steps // 2), gamma=0.3)
    hr_val = random_textures(64, args.patch, gen)

    for step in range(1, args.steps + 1):
        hr = random_textures(args.batch, args.patch, gen).to(device)
        lr = degrade(hr, args.scale)
        sr = model(lr)
        loss = F.l1_loss(sr, hr) + 0.1 * F.mse_loss(sr, hr)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        sched.step()
        torch_xla.sync()
        if step % 20 == 0:
            xm.master_print(f"step {step} loss {loss.item():.4f}")

    psnr, base, worst = evaluate(model, hr_val, args.scale, device)
    xm.master_print(f"val PSNR {psnr:.2f} dB (bicubic {base:.2f} dB), worst tiles {worst}")
    if args.steps and xm.is_master_ordinal():
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        xm.save(model.state_dict(), args.out)


if __name__ == "__main__":
    main()
