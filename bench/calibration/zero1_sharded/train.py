"""Train a small two-tower regressor with torch-xla's ZeRO-1 optimizer (sharded optimizer state).

PyTorch/XLA script in the shape of multi-worker ZeRO-1 jobs, run here on one device (a world of
one: every shard is the whole tensor). bf16 is switched on the old way: XLA_USE_BF16 is set
before torch is imported. `ZeroRedundancyOptimizer` wraps AdamW, clips the gradient norm itself,
and its state dict is saved with `xm.save` at the end, as a resumable job does.
"""
import os
os.environ["XLA_USE_BF16"] = "1"

import argparse
import tempfile

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer


NUM_SAMPLES = 2048
LEFT, RIGHT = 24, 16


class TwoTower(nn.Module):
    """Two feature towers merged by a small head."""

    def __init__(self, hidden):
        super().__init__()
        self.left = nn.Sequential(nn.Linear(LEFT, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.right = nn.Sequential(nn.Linear(RIGHT, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.head = nn.Sequential(nn.LayerNorm(2 * hidden), nn.Linear(2 * hidden, 1))

    def forward(self, left, right):
        return self.head(torch.cat([self.left(left), self.right(right)], dim=-1)).squeeze(-1)


def make_dataset(seed):
    gen = torch.Generator().manual_seed(seed)
    left = torch.randn(NUM_SAMPLES, LEFT, generator=gen)
    right = torch.randn(NUM_SAMPLES, RIGHT, generator=gen)
    target = torch.tanh(left[:, :4].sum(-1)) + 0.5 * right[:, 0] + 0.01 * torch.randn(NUM_SAMPLES, generator=gen)
    return left, right, target


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=48)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    device = torch_xla.device()
    left, right, target = make_dataset(args.seed)

    model = TwoTower(args.hidden).to(device)
    optimizer = ZeroRedundancyOptimizer(
        model.parameters(),
        torch.optim.AdamW,
        lr=args.lr,
        weight_decay=0.01,
        max_norm=args.max_grad_norm,
        pin_layout=False,
    )
    loss_fn = nn.MSELoss()

    batch_gen = torch.Generator().manual_seed(args.seed + 1)
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, NUM_SAMPLES, (args.batch_size,), generator=batch_gen)
        xl, xr, y = left[idx].to(device), right[idx].to(device), target[idx].to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(xl, xr), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)

    output_dir = args.output_dir or tempfile.mkdtemp(prefix="zero1-")
    xm.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, os.path.join(output_dir, "final.pt"))


if __name__ == "__main__":
    main()
