"""Tiny U-Net-ish segmenter for 3 classes (background, disc, ring), launched with torch_xla.launch."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr

C, H = 3, 32


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:H, :H]
    imgs, masks = np.zeros((n, 1, H, H), np.float32), np.zeros((n, H, H), np.int64)
    for i in range(n):
        cy, cx, r = rng.uniform(8, 24), rng.uniform(8, 24), rng.uniform(3, 7)
        d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
        masks[i][d < r] = 1
        masks[i][(d >= r + 1) & (d < r + 3)] = 2
        imgs[i, 0] = masks[i] * 0.5 + rng.normal(0, 0.2, (H, H))
    return imgs, masks


def block(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1, self.e2 = block(1, 16), block(16, 32)
        self.d1, self.out = block(48, 16), nn.Conv2d(16, C, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        u = F.interpolate(b, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.d1(torch.cat([a, u], 1)))


def dice_loss(logits, y, eps=1.0):
    probs = logits.softmax(1)
    onehot = F.one_hot(y, C).permute(0, 3, 1, 2).float()
    inter = (probs * onehot).sum((0, 2, 3))
    card = probs.sum((0, 2, 3)) + onehot.sum((0, 2, 3))
    dice = (2 * inter + eps) / (card + eps)
    return 1 - dice.mean(), dice.detach()


def _mp_fn(index, cfg):
    device = torch_xla.device()
    rank, world = xr.global_ordinal(), xr.world_size()
    imgs, masks = make_data(cfg["n"], seed=rank)
    hist, _ = np.histogram(masks, bins=C, range=(0, C))
    weights = 1.0 / np.log(1.02 + hist / hist.sum())                    # ENet class weighting, float64
    class_w = torch.from_numpy(weights / weights.mean()).float().to(device)
    ds = torch.utils.data.TensorDataset(torch.from_numpy(imgs), torch.from_numpy(masks))
    loader = torch.utils.data.DataLoader(ds, batch_size=cfg["bs"], shuffle=True, drop_last=True)
    model = Net().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"] * world)
    for epoch in range(cfg["epochs"]):
        dice_sum = torch.zeros(C, device=device)
        for x, y in pl.MpDeviceLoader(loader, device):
            with torch_xla.step():
                logits = model(x)
                ce = F.cross_entropy(logits, y, weight=class_w)
                dl, dice = dice_loss(logits, y)
                loss = ce + dl
                opt.zero_grad()
                loss.backward()
                xm.optimizer_step(opt)
                dice_sum += dice
        per_class = xm.mesh_reduce("dice", dice_sum / len(loader), np.mean)
        xm.master_print("epoch", epoch, "loss", loss, "dice/class", np.round(per_class, 3))
    xm.rendezvous("train_done")

    model.eval()
    with torch.no_grad():
        x = torch.from_numpy(imgs[:4]).to(device)
        prob = model(x).softmax(1)
        conf, pred = prob.max(1)
    np.savez(os.path.join(cfg["out"], f"pred_{rank}.npz"), pred=pred.cpu().numpy().astype(np.uint8),
             conf=conf.cpu().numpy(), fg=prob[:, 1:].sum(1).cpu().numpy())
    xm.save(model.state_dict(), os.path.join(cfg["out"], "seg.pt"), master_only=True)


if __name__ == "__main__":
    os.environ.update({"PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "TPU"), "XLA_USE_BF16": "1"})
    cfg = {"n": 48, "bs": 8, "lr": 2e-3, "epochs": 2, "out": sys.argv[1] if len(sys.argv) > 1 else "out"}
    os.makedirs(cfg["out"], exist_ok=True)
    torch_xla.launch(_mp_fn, args=(cfg,))
