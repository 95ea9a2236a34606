"""Wide & deep click-through-rate model on synthetic click logs."""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn.functional as F
import torch_xla

from models import build_model
from optim_setup import build_optimizer

CONFIG = {
    "cardinalities": [50, 20, 12, 7],
    "n_dense": 8,
    "emb_dim": 8,
    "cross_buckets": 97,
    "wide_lr": 0.05,
    "deep_lr": 3e-3,
}


def click_logs(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    cat = torch.stack([torch.randint(0, c, (n,), generator=g) for c in CONFIG["cardinalities"]], dim=1)
    dense = torch.randn(n, CONFIG["n_dense"], generator=g)
    score = dense[:, 0] - 0.5 * dense[:, 1] + (cat[:, 0] % 5 == 0).float() - 0.5
    clicks = (torch.rand(n, generator=g) < torch.sigmoid(score)).float()
    return cat, dense, clicks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    model = build_model(CONFIG).to(device)
    optimizer = build_optimizer(model, CONFIG)
    cat, dense, clicks = click_logs(args.batch * 8, seed=2)

    for step in range(args.steps):
        sl = slice((step % 8) * args.batch, (step % 8 + 1) * args.batch)
        batch = {"categorical": cat[sl].to(device), "dense": dense[sl].to(device), "click": clicks[sl].to(device)}
        optimizer.zero_grad()
        logits = model(batch["categorical"], batch["dense"])
        loss = F.binary_cross_entropy_with_logits(logits, batch["click"])
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
