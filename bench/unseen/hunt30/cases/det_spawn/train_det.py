"""Single-scale anchor detector on synthetic squares, one process per TPU core (xmp.spawn)."""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp

IMG, STRIDE, SIZES = 32, 8, (6.0, 12.0)


def synth(n, seed):
    rng = np.random.default_rng(seed)
    imgs = rng.normal(0, 0.1, (n, 3, IMG, IMG)).astype(np.float32)
    boxes = np.zeros((n, 4), np.float32)
    for i in range(n):
        s = rng.uniform(5, 13)
        x0, y0 = rng.uniform(0, IMG - s, 2)
        imgs[i, :, int(y0):int(y0 + s), int(x0):int(x0 + s)] += 1.0
        boxes[i] = (x0, y0, x0 + s, y0 + s)
    return torch.from_numpy(imgs), torch.from_numpy(boxes)


def make_anchors(device):
    fh = fw = IMG // STRIDE
    ys, xs = torch.meshgrid(torch.arange(fh, device=device), torch.arange(fw, device=device), indexing="ij")
    ctr = torch.stack([(xs + 0.5) * STRIDE, (ys + 0.5) * STRIDE], -1).reshape(-1, 1, 2)
    half = torch.tensor(SIZES, device=device).view(1, -1, 1) / 2
    return torch.cat([ctr - half, ctr + half], -1).reshape(-1, 4)          # (fh*fw*A, 4)


def box_iou(a, b):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    return inter / (area(a)[:, None] + area(b)[None, :] - inter + 1e-6)


def giou_loss(p, t):
    lt, rb = torch.max(p[:, :2], t[:, :2]), torch.min(p[:, 2:], t[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = (p[:, 2:] - p[:, :2]).prod(-1) + (t[:, 2:] - t[:, :2]).prod(-1) - inter
    hull = (torch.max(p[:, 2:], t[:, 2:]) - torch.min(p[:, :2], t[:, :2])).prod(-1)
    iou = inter / (union + 1e-6)
    return (1 - iou + (hull - union) / (hull + 1e-6)).mean()


class Detector(nn.Module):
    def __init__(self, a=len(SIZES)):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                  nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU())
        self.cls, self.reg, self.a = nn.Conv2d(32, a, 1), nn.Conv2d(32, 4 * a, 1), a

    def forward(self, x):
        f = self.body(x)
        b = f.shape[0]
        return self.cls(f).permute(0, 2, 3, 1).reshape(b, -1), self.reg(f).permute(0, 2, 3, 1).reshape(b, -1, 4)


def nms(boxes, scores, thr):
    order, keep = np.argsort(-scores), []
    while order.size:
        i = order[0]
        keep.append(int(i))
        ious = box_iou(torch.from_numpy(boxes[i:i + 1]), torch.from_numpy(boxes[order[1:]]))[0].numpy()
        order = order[1:][ious < thr]
    return keep


def _mp_fn(index, flags):
    os.environ["XLA_USE_BF16"] = "1"
    torch.manual_seed(flags.seed + index)
    device = xm.xla_device()
    anchors = make_anchors(device)
    model = Detector().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=flags.lr, momentum=0.9)
    x, gt = synth(flags.n, flags.seed + index)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, gt), batch_size=flags.bs, shuffle=True)
    for epoch in range(flags.epochs):
        model.train()
        for step, (img, box) in enumerate(pl.ParallelLoader(loader, [device]).per_device_loader(device)):
            logits, deltas = model(img)
            iou = box_iou(anchors, box)                                   # (N_anchor, B)
            pos = (iou.t() > 0.3).float()                                 # (B, N_anchor)
            obj = F.binary_cross_entropy_with_logits(logits, pos)
            pred = anchors[None] + deltas * STRIDE
            best = iou.argmax(0)                                          # best anchor per image
            sel = pred[torch.arange(pred.shape[0], device=device), best]
            loss = obj + giou_loss(sel, box)
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
        val = xm.mesh_reduce("train_loss", loss.item(), np.mean)
        xm.master_print(f"epoch {epoch} loss {val:.4f}")

    model.eval()
    with torch.no_grad():
        img, box = x[:8].to(device), gt[:8]
        logits, deltas = model(img)
        boxes = (anchors[None] + deltas * STRIDE).cpu().numpy()
        scores = logits.sigmoid().cpu().numpy()
    dets = []
    for i in range(len(img)):
        keep = nms(boxes[i], scores[i], 0.5)[:3]
        dets.append({"boxes": boxes[i][keep].round(2).tolist(), "scores": scores[i][keep].round(3).tolist(),
                     "gt": box[i].tolist()})
    if xm.is_master_ordinal():
        os.makedirs(flags.out, exist_ok=True)
        json.dump(dets, open(os.path.join(flags.out, "dets.json"), "w"))
        xm.save(model.state_dict(), os.path.join(flags.out, "det.pt"), master_only=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="out")
    xmp.spawn(_mp_fn, args=(p.parse_args(),))
