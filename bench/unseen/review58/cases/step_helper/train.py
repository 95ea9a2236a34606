"""Tiny regression/classification trainer whose step is a one-liner in a helper; the loss comes from a dict."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 6))
TASK = os.environ.get("TASK", "mse")

LOSSES = {
    "ce": lambda out, y: F.cross_entropy(out, y),
    "nll": lambda out, y: F.nll_loss(F.log_softmax(out, dim=-1), y),
    "hinge": nn.MultiMarginLoss(),
    "mse": lambda out, y: F.mse_loss(out, y),
}


def make_model():
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 4))


def make_target(x, w):
    return x @ w if TASK == "mse" else (x @ w).argmax(-1)


def train_step(model, opt, loss_fn, x, y):
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()


@torch.no_grad()
def evaluate(model, loss_fn, x, y):
    out = model(x)
    return loss_fn(out, y), (out.argmax(-1) == y.reshape(len(y), -1).argmax(-1)).float().mean()


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = make_model().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = LOSSES[TASK]
    w = torch.randn(12, 4)
    for step in range(STEPS):
        x = torch.randn(16, 12)
        y = make_target(x, w)
        train_step(model, opt, loss_fn, x.to(dev), y.to(dev))
        xm.mark_step()
        vx = torch.randn(32, 12)
        vloss, acc = evaluate(model, loss_fn, vx.to(dev), make_target(vx, w).to(dev))
        print(f"step {step} val_loss {vloss.item():.4f} acc {acc.item():.3f}")
    dt = {p.dtype for p in model.parameters()}
    print("DTYPES", dt, vloss.cpu().dtype)


if __name__ == "__main__":
    main()
