"""A training loop wrapped in try/except Exception that logs and keeps going (a common shape
in long-running scripts): the harness's stop (SystemExit) must still end it after N steps."""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    features = torch.randn(1024, 16, generator=gen)
    targets = features @ torch.randn(16, 1, generator=gen) / 4
    failures = 0
    for step in range(args.steps):
        try:
            idx = torch.randint(0, 1024, (64,), generator=gen)
            x = features[idx].to(device)
            y = targets[idx].to(device)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            torch_xla.sync()
        except Exception as exc:  # keep training through a bad batch
            failures += 1
            print(f"step {step} failed: {exc!r}; continuing")
    print("done", failures)


if __name__ == "__main__":
    main()
