"""Single-scale anchor detector on synthetic squares: encode/decode, IoU matching, NMS, CSV report."""
import argparse
import csv
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

IMG, STRIDE = 64, 8
SIZES = (12.0, 24.0)


def make_anchors(device):
    g = IMG // STRIDE
    ys, xs = torch.meshgrid(torch.arange(g, device=device), torch.arange(g, device=device), indexing="ij")
    cx = (xs.reshape(-1).float() + 0.5) * STRIDE
    cy = (ys.reshape(-1).float() + 0.5) * STRIDE
    out = []
    for s in SIZES:
        half = torch.full_like(cx, s / 2)
        out.append(torch.stack([cx - half, cy - half, cx + half, cy + half], 1))
    return torch.stack(out, 1).reshape(-1, 4)


def box_iou(a, b):
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area_a[:, None] + area_b[None, :] - inter + 1e-6)


def encode(gt, anchors):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + aw / 2, anchors[:, 1] + ah / 2
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    gx, gy = gt[:, 0] + gw / 2, gt[:, 1] + gh / 2
    return torch.stack([(gx - ax) / aw, (gy - ay) / ah, torch.log(gw / aw), torch.log(gh / ah)], 1)


def decode(deltas, anchors):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + aw / 2, anchors[:, 1] + ah / 2
    cx, cy = ax + deltas[:, 0] * aw, ay + deltas[:, 1] * ah
    w = aw * deltas[:, 2].clamp(max=math.log(1000 / 16)).exp()
    h = ah * deltas[:, 3].clamp(max=math.log(1000 / 16)).exp()
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)


def nms(boxes, scores, thr=0.5):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(int(i))
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]
        order = order[1:][ious <= thr]
    return torch.tensor(keep, dtype=torch.long)


class Head(nn.Module):
    def __init__(self, na=len(SIZES)):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU())
        self.cls = nn.Conv2d(32, na, 1)
        self.reg = nn.Conv2d(32, na * 4, 1)

    def forward(self, x):
        f = self.body(x)
        n = x.shape[0]
        logits = self.cls(f).permute(0, 2, 3, 1).reshape(n, -1)
        deltas = self.reg(f).permute(0, 2, 3, 1).reshape(n, -1, 4)
        return logits, deltas


def sample(n, gen):
    imgs = torch.zeros(n, 1, IMG, IMG)
    boxes = []
    for k in range(n):
        s = int(torch.randint(10, 26, (1,), generator=gen))
        x0, y0 = (int(v) for v in torch.randint(0, IMG - s, (2,), generator=gen))
        imgs[k, 0, y0:y0 + s, x0:x0 + s] = 1.0
        boxes.append(torch.tensor([x0, y0, x0 + s, y0 + s], dtype=torch.float32))
    return imgs, torch.stack(boxes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--out", default="boxes.csv")
    args = ap.parse_args()
    device = torch_xla.device()
    anchors = make_anchors(device)
    model = Head().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        imgs, gt = sample(16, gen)
        imgs, gt = imgs.to(device), gt.to(device)
        logits, deltas = model(imgs)
        loss_cls, loss_reg = 0.0, 0.0
        for k in range(imgs.shape[0]):
            iou = box_iou(anchors, gt[k:k + 1])[:, 0]
            pos = (iou >= 0.4) | (iou == iou.max())
            target = pos.float()
            loss_cls = loss_cls + F.binary_cross_entropy_with_logits(logits[k], target)
            tgt = encode(gt[k:k + 1].expand(int(pos.sum()), 4), anchors[pos])
            loss_reg = loss_reg + F.smooth_l1_loss(deltas[k][pos], tgt, beta=1 / 9)
        loss = (loss_cls + loss_reg) / imgs.shape[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    imgs, gt = sample(4, gen)
    rows = []
    with torch.no_grad():
        logits, deltas = model(imgs.to(device))
        for k in range(imgs.shape[0]):
            scores = logits[k].sigmoid()
            boxes = decode(deltas[k], anchors)
            keep = nms(boxes.cpu(), scores.cpu(), thr=0.3)[:3]
            kept = boxes.cpu()[keep]
            best = box_iou(kept, gt[k:k + 1])[:, 0]
            for b, s, q in zip(kept.tolist(), scores.cpu()[keep].tolist(), best.tolist()):
                rows.append({"img": k, "x0": b[0], "y0": b[1], "x1": b[2], "y1": b[3], "score": s, "iou": q})
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("dtype", boxes.cpu().dtype, "rows", len(rows), "best iou", max(r["iou"] for r in rows))


if __name__ == "__main__":
    main()
