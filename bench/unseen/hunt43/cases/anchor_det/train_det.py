"""Single-class anchor-based detector on synthetic 32x32 images with one bright rectangle: anchors from
torch.meshgrid as a registered buffer, IoU matching, smooth-L1 box regression, NMS by hand at evaluation."""
import os

os.environ["XLA_USE_BF16"] = "1"

import json
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

IMG = 32
STRIDE = 4
SIZES = (6.0, 10.0, 14.0)


class AnchorGrid(nn.Module):
    def __init__(self, img=IMG, stride=STRIDE, sizes=SIZES):
        super().__init__()
        n = img // stride
        ys, xs = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
        cy = (ys.flatten().float() + 0.5) * stride
        cx = (xs.flatten().float() + 0.5) * stride
        anchors = []
        for s in sizes:
            anchors.append(torch.stack([cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2], dim=1))
        self.register_buffer("anchors", torch.stack(anchors, dim=1).reshape(-1, 4))


class Detector(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.grid = AnchorGrid()
        self.k = len(SIZES)
        self.body = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.cls = nn.Conv2d(ch, self.k, 1)
        self.reg = nn.Conv2d(ch, self.k * 4, 1)

    def forward(self, x):
        f = self.body(x)
        b = x.size(0)
        obj = self.cls(f).permute(0, 2, 3, 1).reshape(b, -1)
        deltas = self.reg(f).permute(0, 2, 3, 1).reshape(b, -1, 4)
        return obj, deltas


def box_iou(a, b):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / (area_a[:, None] + area_b[None, :] - inter)


def encode(anchors, gt):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + aw / 2, anchors[:, 1] + ah / 2
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    gx, gy = gt[:, 0] + gw / 2, gt[:, 1] + gh / 2
    return torch.stack([(gx - ax) / aw, (gy - ay) / ah, torch.log(gw / aw), torch.log(gh / ah)], dim=1)


def decode(anchors, d):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + aw / 2, anchors[:, 1] + ah / 2
    cx, cy = ax + d[:, 0] * aw, ay + d[:, 1] * ah
    w, h = aw * torch.exp(d[:, 2]), ah * torch.exp(d[:, 3])
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=1)


def nms(boxes, scores, thr=0.5, top=5):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0 and len(keep) < top:
        i = order[0].item()
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i:i + 1], boxes[order[1:]])[0]
        order = order[1:][ious <= thr]
    return keep


def make_batch(rng, b):
    imgs = np.zeros((b, 1, IMG, IMG), dtype=np.float32)
    boxes = []
    for j in range(b):
        w, h = rng.integers(5, 15, size=2)
        x0, y0 = rng.integers(0, IMG - w), rng.integers(0, IMG - h)
        imgs[j, 0, y0:y0 + h, x0:x0 + w] = 1.0
        boxes.append([float(x0), float(y0), float(x0 + w), float(y0 + h)])
    imgs += 0.1 * rng.standard_normal(imgs.shape).astype(np.float32)
    return imgs, boxes


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("STEPS", "200"))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = Detector().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        imgs, boxes = make_batch(rng, 16)
        x = torch.from_numpy(imgs).to(dev)
        gt = torch.tensor(boxes, device=dev)
        obj, deltas = model(x)
        anchors = model.grid.anchors
        iou = box_iou(anchors, gt)  # (A, B): every image has one box, so column j is image j's
        best = iou.t()  # (B, A)
        pos = best >= 0.4
        pos = pos | (best == best.max(dim=1, keepdim=True).values)
        cls_loss = F.binary_cross_entropy_with_logits(obj, pos.float())
        tgt = torch.stack([encode(anchors, gt[j:j + 1].expand(anchors.size(0), 4)) for j in range(gt.size(0))])
        reg_loss = F.smooth_l1_loss(deltas[pos], tgt[pos], beta=1.0 / 9)
        loss = cls_loss + reg_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        if step % 25 == 0 or step == steps - 1:
            print(f"step {step} cls {cls_loss.item():.4f} reg {reg_loss.item():.4f}")

    print("DTYPES conv", model.cls.weight.dtype, "anchors", model.grid.anchors.dtype, "gt", gt.dtype, "iou", iou.dtype, "tgt", tgt.dtype)
    model.eval()
    imgs, boxes = make_batch(rng, 4)
    results = []
    with torch.no_grad():
        obj, deltas = model(torch.from_numpy(imgs).to(dev))
        for j in range(4):
            pred = decode(model.grid.anchors, deltas[j])
            scores = obj[j].sigmoid()
            keep = nms(pred, scores)
            det = pred[keep].cpu()
            truth = torch.tensor([boxes[j]])
            results.append({"boxes": det.tolist(), "best_iou": box_iou(det[:1], truth).item(),
                            "score": scores[keep[0]].item()})
    print(json.dumps({"mean_best_iou": float(np.mean([r["best_iou"] for r in results]))}))
    print("det dtype", det.dtype)


if __name__ == "__main__":
    main()
