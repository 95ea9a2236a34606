"""1-D CNN demand forecaster; checkpoints every --save-every steps and resumes from the last one.

A restarted job (preemption) finds CKPT_DIR/last.pt and continues where it stopped: model,
optimizer, LR schedule, step and the data generator's state are all in the checkpoint.
"""

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
from data import CHANNELS, HORIZON, WINDOW, make_series, windows


class Forecaster(nn.Module):
    def __init__(self, width: int = 32):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(CHANNELS, width, 5, padding=2), nn.GELU(),
            nn.Conv1d(width, width, 5, padding=4, dilation=2), nn.GELU(),
        )
        self.head = nn.Linear(width * WINDOW, HORIZON)

    def forward(self, x):
        return self.head(self.conv(x).flatten(1))


def save_checkpoint(path, model, optimizer, scheduler, step, rng):
    xm.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "step": step,
            "rng": rng.bit_generator.state,
        },
        path,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--stop-after", type=int, default=None,
                        help="leave after this many steps of this run (for testing resumption)")
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--ckpt-dir", default="ckpt")
    parser.add_argument("--log", default="logs/history.jsonl")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    series = make_series()
    mean = series.mean(axis=(0, 2), keepdims=True)
    std = series.std(axis=(0, 2), keepdims=True)
    series = (series - mean) / std

    model = Forecaster().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 5) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps))
    )
    rng = np.random.default_rng(1)
    start = 0
    last = os.path.join(args.ckpt_dir, "last.pt")
    if os.path.exists(last):
        ckpt = torch.load(last, map_location="cpu", weights_only=False)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        rng.bit_generator.state = ckpt["rng"]
        start = ckpt["step"]
        print(f"resumed from {last} at step {start}")

    os.makedirs(args.ckpt_dir, exist_ok=True)
    os.makedirs(os.path.dirname(args.log), exist_ok=True)
    stop = args.steps if args.stop_after is None else min(args.steps, start + args.stop_after)
    with open(args.log, "a") as log:
        for step in range(start, stop):
            x, y = windows(series, rng, args.batch_size)
            x = torch.from_numpy(x).float().to(device)
            y = torch.from_numpy(y).float().to(device)
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            torch_xla.sync()
            log.write(json.dumps({"step": step + 1, "loss": loss.item(), "lr": scheduler.get_last_lr()[0]}) + "\n")
            if (step + 1) % args.save_every == 0 or step + 1 == stop:
                save_checkpoint(last, model, optimizer, scheduler, step + 1, rng)

    if stop == args.steps:
        # a forecast of the last window of every series, in the data's units, for the report
        model.eval()
        with torch.no_grad():
            x = torch.from_numpy(series[:, :, -WINDOW:]).float().to(device)
            pred = model(x).cpu().numpy()
        np.save(os.path.join(args.ckpt_dir, "final_forecast.npy"), pred * std[:, 0] + mean[:, 0])


if __name__ == "__main__":
    main()
