"""Tiny legacy training script for the verify end-to-end tests: bf16 through XLA_USE_BF16.

tests/data/verify_mlp_stochastic.py is the same script migrated by hand (stochastic mode).
"""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    features = torch.randn(1024, 16, generator=gen)
    targets = features @ torch.randn(16, 1, generator=gen) / 4
    for step in range(args.steps):
        idx = torch.randint(0, 1024, (64,), generator=gen)
        x = features[idx].to(device)
        y = targets[idx].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
