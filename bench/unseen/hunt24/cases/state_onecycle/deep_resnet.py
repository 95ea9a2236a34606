"""Deep residual MLP trained with activation checkpointing and OneCycleLR; restartable TrainState."""
import argparse
import math
import os
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential

import torch_xla
import torch_xla.core.xla_model as xm


class ResBlock(nn.Module):
    def __init__(self, dim, expansion=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * expansion)
        self.fc2 = nn.Linear(dim * expansion, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-2))

    def forward(self, x):
        return x + self.gamma * self.fc2(F.gelu(self.fc1(self.norm(x))))


class DeepNet(nn.Module):
    def __init__(self, in_dim, dim, depth, n_out, segments):
        super().__init__()
        self.stem = nn.Linear(in_dim, dim)
        self.blocks = nn.Sequential(*[ResBlock(dim) for _ in range(depth)])
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, n_out))
        self.segments = segments

    def forward(self, x):
        h = self.stem(x)
        if self.training:
            h = checkpoint_sequential(self.blocks, self.segments, h, use_reentrant=False)
        else:
            h = self.blocks(h)
        return self.head(h)


@dataclass
class TrainState:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    step: int = 0
    best_loss: float = math.inf
    losses: list = field(default_factory=list)

    def state_dict(self):
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "step": self.step,
                "best_loss": self.best_loss, "losses": self.losses}

    def load_state_dict(self, sd):
        self.model.load_state_dict(sd["model"])
        self.optimizer.load_state_dict(sd["optimizer"])
        self.scheduler.load_state_dict(sd["scheduler"])
        self.step, self.best_loss, self.losses = sd["step"], sd["best_loss"], sd["losses"]


def target_fn(x):
    return torch.stack([torch.sin(3 * x[:, 0]) * x[:, 1], (x[:, 2:5] ** 2).sum(1) - 1.0], dim=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=96)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--max-lr", type=float, default=2e-3)
    p.add_argument("--ckpt-dir", default="ckpt")
    p.add_argument("--resume", default=None)
    args = p.parse_args()

    device = torch_xla.device()
    torch.manual_seed(1)
    model = DeepNet(16, 128, args.depth, 2, segments=4).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.max_lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.max_lr, total_steps=args.steps,
                                                    pct_start=0.25, div_factor=20.0)
    state = TrainState(model, optimizer, scheduler)
    if args.resume:
        state.load_state_dict(torch.load(args.resume, map_location="cpu"))
        print(f"resumed at step {state.step}")

    x_val = torch.rand(512, 16, device=device) * 2 - 1
    y_val = target_fn(x_val)
    os.makedirs(args.ckpt_dir, exist_ok=True)
    while state.step < args.steps:
        x = torch.rand(args.batch, 16, device=device) * 2 - 1
        y = target_fn(x)
        loss = F.mse_loss(state.model(x), y)
        state.optimizer.zero_grad()
        loss.backward()
        xm.optimizer_step(state.optimizer)
        state.scheduler.step()
        state.step += 1
        torch_xla.sync()
        state.losses.append(loss.item())
        if state.step % 20 == 0:
            state.model.eval()
            with torch.no_grad():
                val = F.mse_loss(state.model(x_val), y_val).item()
            state.model.train()
            if val < state.best_loss:
                state.best_loss = val
                xm.save(state.model.state_dict(), os.path.join(args.ckpt_dir, "best.pt"))
            print(f"step {state.step} train {sum(state.losses[-20:]) / 20:.4f} val {val:.4f} "
                  f"lr {state.scheduler.get_last_lr()[0]:.2e}")
            xm.save(state.state_dict(), os.path.join(args.ckpt_dir, "last.pt"))


if __name__ == "__main__":
    main()
