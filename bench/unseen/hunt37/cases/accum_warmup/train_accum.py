"""Tabular regression with gradient accumulation, a tensor-computed warmup/cosine
schedule, and gradient-norm logging. Statistics are accumulated in float64."""
import math
import os

import torch
import torch.nn as nn
import torch_xla

STEPS = int(os.environ.get("STEPS", "24"))
ACCUM = 4
WARMUP = 6
BASE_LR = 3e-3
FEATURES = 20


class ResMLP(nn.Module):
    def __init__(self, d=FEATURES, h=96):
        super().__init__()
        self.inp = nn.Linear(d, h)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(h), nn.Linear(h, h), nn.SiLU()) for _ in range(3))
        self.out = nn.Linear(h, 1)

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = h + blk(h)
        return self.out(h).squeeze(-1)


def lr_at(step_t, total):
    warm = torch.clamp((step_t + 1) / WARMUP, max=1.0)
    progress = torch.clamp((step_t - WARMUP) / max(1, total - WARMUP), min=0.0)
    return BASE_LR * warm * 0.5 * (1 + torch.cos(math.pi * progress))


def micro_batches(gen, w_true):
    for _ in range(ACCUM):
        x = torch.randn(32, FEATURES, generator=gen)
        y = x @ w_true + 0.05 * torch.randn(32, generator=gen)
        yield x, y


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(5)
    w_true = torch.randn(FEATURES, generator=gen)
    dev = torch_xla.device()
    model = ResMLP().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=BASE_LR, weight_decay=1e-4)
    step_t = torch.zeros((), device=dev)
    sq_err_sum = torch.zeros((), dtype=torch.float64, device=dev)
    n_seen = 0

    for step in range(STEPS):
        opt.zero_grad(set_to_none=True)
        total = torch.zeros((), device=dev)
        for x, y in micro_batches(gen, w_true):
            x, y = x.to(dev), y.to(dev)
            pred = model(x)
            loss = nn.functional.mse_loss(pred, y) / ACCUM
            loss.backward()
            total += loss.detach()
            sq_err_sum += ((pred.detach() - y) ** 2).sum().double()
            n_seen += y.numel()
        lr = lr_at(step_t, STEPS)
        for group in opt.param_groups:
            group["lr"] = lr.item()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        step_t += 1
        torch_xla.sync()
        print(f"step {step} loss {total.item():.5f} lr {lr.item():.6f} gnorm {gnorm.item():.4f}")

    rmse = torch.sqrt(sq_err_sum / n_seen)
    print(f"running rmse {rmse.item():.5f}")
    print("DTYPES weight", model.out.weight.dtype, "loss", total.dtype, "gnorm", gnorm.dtype,
          "acc", sq_err_sum.dtype, "lr", lr.dtype, "host", rmse.cpu().dtype)


if __name__ == "__main__":
    main()
