"""Masked-patch transformer forecaster for irregular multivariate series (padded, with a validity mask).
Syncfree AdamW, gradient accumulation, per-horizon error report."""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch_xla.amp import syncfree

CTX, HORIZON, CH, D = 48, 12, 4, 96


class SeriesSet(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        t = np.arange(CTX + HORIZON)
        self.items = []
        for _ in range(n):
            freq = rng.uniform(0.05, 0.3, CH)
            phase = rng.uniform(0, 2 * math.pi, CH)
            y = np.sin(t[:, None] * freq + phase) + 0.1 * rng.normal(size=(t.size, CH))
            valid = rng.random(CTX) > 0.15  # dropped sensor readings in the context
            self.items.append((y.astype(np.float32), valid))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        y, valid = self.items[i]
        return torch.from_numpy(y[:CTX]), torch.from_numpy(valid), torch.from_numpy(y[CTX:])


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(CH + 1, D)
        self.time = nn.Embedding(CTX, D)
        self.q = nn.Parameter(torch.randn(HORIZON, D) * 0.02)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.ff = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
        self.out = nn.Linear(D, CH)

    def forward(self, x, valid):
        x = torch.where(valid[..., None], x, 0.0)
        h = self.inp(torch.cat([x, valid[..., None].to(x.dtype)], -1))
        h = h + self.time.weight[None]
        q = self.q[None].expand(x.shape[0], -1, -1)
        scores = q @ h.transpose(1, 2) / math.sqrt(D)
        scores = scores.masked_fill(~valid[:, None, :], torch.finfo(scores.dtype).min)
        ctx = scores.softmax(-1) @ h
        a, _ = self.attn(ctx, h, h, key_padding_mask=~valid)
        z = ctx + a
        return self.out(z + self.ff(z))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--out", default="out/forecast")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    device = torch_xla.device()
    torch.manual_seed(0)

    train = torch.utils.data.DataLoader(SeriesSet(1024, 0), batch_size=args.bs, shuffle=True, drop_last=True)
    val = torch.utils.data.DataLoader(SeriesSet(256, 1), batch_size=64)
    train_dl = pl.MpDeviceLoader(train, device)
    model = Forecaster().to(device)
    opt = syncfree.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    steps_per_epoch = len(train) // args.accum
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=args.epochs * steps_per_epoch)

    for epoch in range(args.epochs):
        model.train()
        losses = []
        for i, (x, valid, y) in enumerate(train_dl):
            pred = model(x, valid)
            loss = F.smooth_l1_loss(pred, y) / args.accum
            loss.backward()
            losses.append(loss.detach() * args.accum)
            if (i + 1) % args.accum == 0:
                xm.optimizer_step(opt)
                opt.zero_grad()
                sched.step()
        epoch_loss = torch.stack(losses).mean()
        xm.master_print(f"epoch {epoch} train {epoch_loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")

    model.eval()
    err = torch.zeros(HORIZON, device=device)
    n = 0
    examples = []
    with torch.no_grad():
        for x, valid, y in val:
            x, valid, y = x.to(device), valid.to(device), y.to(device)
            pred = model(x, valid)
            err += (pred - y).abs().mean(dim=(0, 2)) * x.shape[0]
            n += x.shape[0]
            if not examples:
                examples = pred[:2].cpu().tolist()
    mae = (err / n).cpu()
    report = {"mae_by_horizon": [round(v, 4) for v in mae.tolist()], "examples": examples}
    with open(os.path.join(args.out, "report.json"), "w") as fh:
        json.dump(report, fh)
    print("mae h1 %.4f h%d %.4f" % (mae[0], HORIZON, mae[-1]))
    xm.save(model.state_dict(), os.path.join(args.out, "forecaster.pt"))


if __name__ == "__main__":
    main()
