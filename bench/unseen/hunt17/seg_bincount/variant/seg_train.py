"""Tiny semantic segmentation on synthetic shapes; class-balanced cross-entropy with weights from
np.bincount of the training masks. The run is configured by a nested dict (as a Hydra config would be)."""
import os

CFG = {
    "env": {"PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "TPU")},
    "data": {"n": 96, "size": 32, "classes": 3, "dtype": "float32"},
    "model": {"width": 16},
    "optim": {"lr": 2e-3, "betas": [0.9, 0.99], "steps": 12, "batch": 16},
}
os.environ.update(CFG["env"])

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def make_shapes(n, size, classes, rng):
    """Images with a disc (class 1) and a square (class 2) on background 0; class 2 is rare."""
    imgs = rng.normal(0.0, 0.3, size=(n, 1, size, size))
    masks = np.zeros((n, size, size), dtype=np.int64)
    yy, xx = np.mgrid[:size, :size]
    for i in range(n):
        cy, cx, r = rng.integers(8, size - 8), rng.integers(8, size - 8), rng.integers(4, 8)
        disc = (yy - cy) ** 2 + (xx - cx) ** 2 < r ** 2
        masks[i][disc] = 1
        imgs[i, 0][disc] += 1.0
        if classes > 2 and i % 3 == 0:
            sy, sx = rng.integers(0, size - 5, size=2)
            masks[i, sy:sy + 4, sx:sx + 4] = 2
            imgs[i, 0, sy:sy + 4, sx:sx + 4] -= 1.0
    return imgs, masks


class TinySeg(nn.Module):
    def __init__(self, classes, width):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(2 * width, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, classes, 1))

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        return self.dec(torch.cat([self.up(e2), e1], dim=1))


def main(cfg):
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    dc, oc = cfg["data"], cfg["optim"]
    dtype = getattr(torch, dc["dtype"])
    device = torch_xla.device()

    imgs, masks = make_shapes(dc["n"], dc["size"], dc["classes"], rng)
    counts = np.bincount(masks.ravel(), minlength=dc["classes"])
    class_w = torch.from_numpy(counts.sum() / (dc["classes"] * counts)).to(device)  # float64
    x_all = torch.as_tensor(imgs, dtype=dtype)
    y_all = torch.from_numpy(masks)

    model = TinySeg(dc["classes"], cfg["model"]["width"]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=oc["lr"], betas=tuple(oc["betas"]))
    for step in range(oc["steps"]):
        sel = rng.choice(dc["n"], oc["batch"], replace=False)
        x, y = x_all[sel].to(device), y_all[sel].to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y, weight=class_w)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        pred = model(x_all[:32].to(device)).argmax(1)
        tgt = y_all[:32].to(device)
        inter = torch.stack([((pred == c) & (tgt == c)).sum() for c in range(dc["classes"])]).float()
        union = torch.stack([((pred == c) | (tgt == c)).sum() for c in range(dc["classes"])]).float()
        iou = (inter / union.clamp(min=1)).cpu().numpy()
    print("per-class IoU", np.round(iou, 3).tolist(), "weights", class_w.cpu().numpy().round(3).tolist())


if __name__ == "__main__":
    main(CFG)
