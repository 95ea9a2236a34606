"""Train a small MLP regressor on a synthetic linear-plus-noise problem.

Single-device PyTorch/XLA script. Mixed precision is switched on the old way,
through the XLA_USE_BF16 environment variable, which must be set before torch
is imported.
"""
import os

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


NUM_SAMPLES = 2048
IN_FEATURES = 32
OUT_FEATURES = 4


class MLP(nn.Module):
    """Three linear layers with GELU activations in between."""

    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)
        self.act = nn.GELU()

    def forward(self, x):
        h = self.act(self.fc1(x))
        h = self.act(self.fc2(h))
        return self.fc3(h)


def make_dataset(seed=0):
    """Features ~ N(0, 1); targets are a fixed linear map of them plus a little noise."""
    gen = torch.Generator().manual_seed(seed)
    features = torch.randn(NUM_SAMPLES, IN_FEATURES, generator=gen)
    w_true = torch.randn(IN_FEATURES, OUT_FEATURES, generator=gen) / IN_FEATURES ** 0.5
    noise = 0.05 * torch.randn(NUM_SAMPLES, OUT_FEATURES, generator=gen)
    targets = features @ w_true + noise
    return features, targets


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    device = torch_xla.device()

    features, targets = make_dataset(args.seed)
    model = MLP(IN_FEATURES, args.hidden, OUT_FEATURES).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    loss_fn = nn.MSELoss()

    batch_gen = torch.Generator().manual_seed(args.seed + 1)
    model.train()
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, NUM_SAMPLES, (args.batch_size,), generator=batch_gen)
        x = features[idx].to(device)
        y = targets[idx].to(device)

        optimizer.zero_grad()
        with torch.autocast("xla", dtype=torch.bfloat16):
            out = model(x)
            loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        xm.mark_step()

        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
