"""A training function launched with torch_xla's xmp.spawn, one process (the shape of the
multi-device example scripts). torch-xla 2.9 accepts nprocs=1 and nprocs=None on the CPU
device (measured: both train); the test passes --nprocs."""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index, steps):
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    features = torch.randn(256, 8, generator=gen)
    targets = features @ torch.randn(8, 1, generator=gen) / 4
    for _ in range(steps):
        idx = torch.randint(0, 256, (32,), generator=gen)
        x = features[idx].to(device)
        y = targets[idx].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
    print(f"rank {index} final loss {loss.item():.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--nprocs", default="1")
    args = parser.parse_args()
    xmp.spawn(_mp_fn, args=(args.steps,), nprocs=None if args.nprocs == "none" else int(args.nprocs))
