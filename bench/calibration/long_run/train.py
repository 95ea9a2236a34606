"""A residual MLP classifier trained for 72 steps with SGD (momentum, Nesterov), a step-decay
learning-rate schedule and label smoothing; bf16 through XLA_DOWNCAST_BF16 set in main()."""

import argparse
import os

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

FEATURES = 40
CLASSES = 6


class ResidualMLP(nn.Module):
    def __init__(self, width=80, depth=3):
        super().__init__()
        self.inp = nn.Linear(FEATURES, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.SiLU()) for _ in range(depth)
        )
        self.out = nn.Linear(width, CLASSES)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


def spirals(n, gen):
    """Points on noisy interleaved spirals, lifted to FEATURES dimensions by a fixed map."""
    labels = torch.randint(0, CLASSES, (n,), generator=gen)
    r = torch.rand(n, generator=gen) * 3
    angle = r * 2.5 + labels * (6.2832 / CLASSES) + 0.2 * torch.randn(n, generator=gen)
    plane = torch.stack([r * torch.cos(angle), r * torch.sin(angle)], dim=1)
    lift = torch.randn(2, FEATURES, generator=gen)
    return torch.tanh(plane @ lift) + 0.05 * torch.randn(n, FEATURES, generator=gen), labels


def main():
    os.environ["XLA_DOWNCAST_BF16"] = "1"
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=72)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(5)
    features, labels = spirals(4096, gen)
    model = ResidualMLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=24, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    for _ in range(args.steps):
        idx = torch.randint(0, 4096, (args.batch_size,), generator=gen)
        x, y = features[idx].to(device), labels[idx].to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        scheduler.step()
        xm.mark_step()


if __name__ == "__main__":
    main()
