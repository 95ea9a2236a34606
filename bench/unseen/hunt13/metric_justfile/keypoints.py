"""Regress the (x, y) position of a bright blob in a noisy 24x24 image with a small CNN.

The head uses a soft-argmax over a heatmap, so coordinates come out in [0, 1]. Validation runs every
epoch with streaming metrics kept on the device; ReduceLROnPlateau watches the validation loss.
"""
import argparse
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from metrics import PCK, MeanEuclideanError

SIZE = 24


def blob_batch(n, generator):
    centre = torch.rand(n, 2, generator=generator) * 0.7 + 0.15
    grid = (torch.arange(SIZE).float() + 0.5) / SIZE
    gy, gx = torch.meshgrid(grid, grid, indexing="ij")
    d2 = (gx[None] - centre[:, 0, None, None]) ** 2 + (gy[None] - centre[:, 1, None, None]) ** 2
    img = torch.exp(-d2 / (2 * 0.06**2)) + 0.25 * torch.randn(n, SIZE, SIZE, generator=generator)
    return img.unsqueeze(1), centre


class SoftArgmaxNet(nn.Module):
    def __init__(self, ch=12):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, 1, 1),
        )
        grid = (torch.arange(SIZE).float() + 0.5) / SIZE
        self.register_buffer("grid", grid)
        self.log_temp = nn.Parameter(torch.zeros(()))

    def forward(self, x):
        heat = self.body(x).flatten(1) * self.log_temp.exp() * 8.0
        p = F.softmax(heat, dim=1).view(-1, SIZE, SIZE)
        x_coord = (p.sum(1) * self.grid).sum(-1)
        y_coord = (p.sum(2) * self.grid).sum(-1)
        return torch.stack([x_coord, y_coord], dim=-1)


def evaluate(model, batches, device, mee, pck):
    model.eval()
    mee.reset()
    pck.reset()
    total = torch.zeros((), device=device)
    with torch.no_grad():
        for img, xy in batches:
            img, xy = img.to(device), xy.to(device)
            pred = model(img)
            total += F.smooth_l1_loss(pred, xy, beta=0.02)
            mee.update(pred, xy)
            pck.update(pred, xy)
    model.train()
    return total / len(batches)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps-per-epoch", type=int, default=8)
    ap.add_argument("--out", default="runs/dev")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    val_batches = [blob_batch(32, g) for _ in range(3)]

    device = torch_xla.device()
    model = SoftArgmaxNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    mee = MeanEuclideanError().to(device)
    pck = PCK(0.05).to(device)

    log = []
    for epoch in range(args.epochs):
        for step in range(args.steps_per_epoch):
            img, xy = blob_batch(32, g)
            img, xy = img.to(device), xy.to(device)
            loss = F.smooth_l1_loss(model(img), xy, beta=0.02)
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()
        val_loss = evaluate(model, val_batches, device, mee, pck)
        sched.step(val_loss)
        row = {"epoch": epoch, "train_loss": loss.item(), "val_loss": val_loss.item(),
               "mee": mee.compute(), "pck@0.05": pck.compute(), "lr": opt.param_groups[0]["lr"],
               "temp": model.log_temp.exp().item()}
        log.append(row)
        print(json.dumps(row))

    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(log, f, indent=1)
    xm.save({"model": model.state_dict(), "pck": pck.state_dict()}, os.path.join(args.out, "last.pt"))


if __name__ == "__main__":
    main()
