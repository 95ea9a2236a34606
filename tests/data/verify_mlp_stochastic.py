"""tests/data/verify_mlp.py migrated by hand to explicit bf16 (what stochastic mode emits)."""

import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

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
    model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    features = torch.randn(1024, 16, generator=gen)
    targets = features @ torch.randn(16, 1, generator=gen) / 4
    for step in range(args.steps):
        idx = torch.randint(0, 1024, (64,), generator=gen)
        x = features[idx].to(device).to(torch.bfloat16)
        y = targets[idx].to(device).to(torch.bfloat16)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
