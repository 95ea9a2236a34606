"""Tiny U-Net for semantic segmentation on synthetic blob images (Dice + CE, mIoU per epoch)."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from seg_utils import IGNORE, ConfusionHist, soft_dice_loss

NUM_CLASSES = 4


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class TinyUNet(nn.Module):
    def __init__(self, cin=3, base=8, n_classes=NUM_CLASSES):
        super().__init__()
        self.enc1 = conv_block(cin, base)
        self.enc2 = conv_block(base, base * 2)
        self.mid = conv_block(base * 2, base * 4)
        self.dec2 = conv_block(base * 4 + base * 2, base * 2)
        self.dec1 = conv_block(base * 2 + base, base)
        self.head = nn.Conv2d(base, n_classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        u2 = F.interpolate(m, size=e2.shape[-2:], mode="bilinear", align_corners=False)
        d2 = self.dec2(torch.cat([u2, e2], dim=1))
        u1 = F.interpolate(d2, size=e1.shape[-2:], mode="bilinear", align_corners=False)
        d1 = self.dec1(torch.cat([u1, e1], dim=1))
        return self.head(d1)


def make_batch(gen, bs, hw=32):
    img = torch.rand(bs, 3, hw, hw, generator=gen) * 0.3
    mask = torch.zeros(bs, hw, hw, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(hw), torch.arange(hw), indexing="ij")
    for b in range(bs):
        for c in range(1, NUM_CLASSES):
            cy, cx = torch.randint(4, hw - 4, (2,), generator=gen).tolist()
            r = 3 + c
            blob = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
            mask[b][blob] = c
            img[b, c - 1][blob] += 0.6
    border = torch.rand(bs, hw, hw, generator=gen) < 0.03
    mask[border] = IGNORE
    return img, mask


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "20")))
    p.add_argument("--steps-per-epoch", type=int, default=2)
    p.add_argument("--bs", type=int, default=2)
    p.add_argument("--out-dir", default="runs/unet")
    args = p.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    dev = xm.xla_device()

    model = TinyUNet().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    ce = nn.CrossEntropyLoss(ignore_index=IGNORE)
    meter = ConfusionHist(NUM_CLASSES, dev)
    history = []

    for step in range(1, args.steps + 1):
        img, mask = make_batch(gen, args.bs)
        img, mask = img.to(dev), mask.to(dev)
        model.train()
        logits = model(img)
        loss = ce(logits, mask) + 0.5 * soft_dice_loss(logits, mask, NUM_CLASSES)
        opt.zero_grad()
        loss.backward()
        opt.step()
        meter.update(logits.detach(), mask)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}")
        if step % args.steps_per_epoch == 0:
            iou, acc = meter.compute()
            history.append({"step": step, "miou": float(iou.mean()), "iou": iou.tolist(), "pix_acc": acc})
            print(f"epoch end step {step}: mIoU {iou.mean():.4f} acc {acc:.4f}")
            meter.reset()

    model.eval()
    with torch.no_grad():
        img, mask = make_batch(gen, 1)
        pred = model(img.to(dev))
        prob = pred.softmax(dim=1)
        conf = prob.max(dim=1).values.cpu().numpy()
        lab = pred.argmax(dim=1).to(torch.uint8).cpu().numpy()
    os.makedirs(args.out_dir, exist_ok=True)
    np.savez(os.path.join(args.out_dir, "val_pred.npz"), label=lab, conf=conf)
    with open(os.path.join(args.out_dir, "history.json"), "w") as f:
        json.dump(history, f)
    print("DTYPES", next(model.parameters()).dtype, logits.dtype, conf.dtype, lab.dtype, meter.hist.dtype)


if __name__ == "__main__":
    main()
