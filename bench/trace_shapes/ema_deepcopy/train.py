"""A regressor trained with an exponential moving average of its weights (a deepcopy of the
model made right after it is built), evaluated with the EMA weights after training."""

import argparse
import copy
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 48)
        self.fc2 = nn.Linear(48, 1)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


@torch.no_grad()
def update_ema(ema, model, decay):
    for ema_p, p in zip(ema.parameters(), model.parameters()):
        ema_p.mul_(decay).add_(p.detach(), alpha=1 - decay)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--decay", type=float, default=0.9)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Net().to(device)
    ema = copy.deepcopy(model)
    ema.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(2)
    w = torch.randn(12, 1, generator=gen)
    for step in range(args.steps):
        x = torch.randn(32, 12, generator=gen)
        y = torch.sin(x @ w)
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        update_ema(ema, model, args.decay)
        torch_xla.sync()
    x = torch.randn(256, 12, generator=gen)
    with torch.no_grad():
        ema_loss = nn.functional.mse_loss(ema(x.to(device)), torch.sin(x @ w).to(device))
    print(f"final loss {loss.item():.4f}, EMA loss {ema_loss.item():.4f}")


if __name__ == "__main__":
    main()
