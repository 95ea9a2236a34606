"""Binary segmentation of synthetic blobs with a two-level U-Net (no torchvision)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def blobs(n, size, rng):
    yy, xx = np.mgrid[0:size, 0:size]
    imgs = np.zeros((n, 1, size, size), dtype=np.float32)
    masks = np.zeros((n, 1, size, size), dtype=np.float32)
    for i in range(n):
        cy, cx = rng.uniform(size * 0.25, size * 0.75, size=2)
        r = rng.uniform(size * 0.1, size * 0.25)
        m = ((yy - cy) ** 2 + (xx - cx) ** 2) < r ** 2
        masks[i, 0] = m
        imgs[i, 0] = m * 0.8 + rng.normal(0, 0.3, size=(size, size))
    return torch.from_numpy(imgs), torch.from_numpy(masks)


def conv_block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self, base=8):
        super().__init__()
        self.enc1 = conv_block(1, base)
        self.enc2 = conv_block(base, base * 2)
        self.mid = conv_block(base * 2, base * 4)
        self.up2 = nn.ConvTranspose2d(base * 4, base * 2, 2, stride=2)
        self.dec2 = conv_block(base * 4, base * 2)
        self.up1 = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
        self.dec1 = conv_block(base * 2, base)
        self.out = nn.Conv2d(base, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.out(d1)


def dice_score(logits, target, eps=1.0):
    pred = (torch.sigmoid(logits) > 0.5).float()
    inter = (pred * target).sum(dim=(1, 2, 3))
    union = pred.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3))
    return ((2 * inter + eps) / (union + eps)).mean()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch_xla.device()
    imgs, masks = blobs(args.batch * args.steps, args.size, rng)

    model = UNet().to(device)
    # foreground is the minority class: weight it
    pos_weight = torch.tensor([2.0], device=device)
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    model.train()
    for step in range(args.steps):
        sl = slice(step * args.batch, (step + 1) * args.batch)
        x = imgs[sl].to(device)
        y = masks[sl].to(device)
        opt.zero_grad()
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        opt.step()
        torch_xla.sync()
        dice = dice_score(logits.detach(), y)
        print(f"step {step} loss {loss.item():.4f} dice {dice.item():.3f}")


if __name__ == "__main__":
    main()
