"""Tabular regressor fit in legs: resumes model, optimizer, scheduler and step from a checkpoint."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Regressor(nn.Module):
    def __init__(self, d=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def warmup_cosine(step, warmup, total, base_lr):
    s = torch.tensor(float(step))
    warm = s / warmup
    cos = 0.5 * (1 + torch.cos(torch.pi * (s - warmup) / max(1, total - warmup)))
    return base_lr * torch.where(s < warmup, warm, cos).item()


def data(rng, n=64, d=10):
    x = rng.normal(size=(n, d))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.1 * rng.normal(size=n)
    return torch.from_numpy(x), torch.from_numpy(y)  # float64 both


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--total", type=int, default=40)
    ap.add_argument("--ckpt", default="ckpt/last.pt")
    args = ap.parse_args()
    device = xm.xla_device()
    torch.manual_seed(0)
    model = Regressor().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    start = 0
    if os.path.exists(args.ckpt):
        ck = torch.load(args.ckpt, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        start = ck["step"]
        print(f"resumed at step {start}, last loss {ck['loss']:.4f}")
    rng = np.random.default_rng(start)
    running = torch.zeros((), dtype=torch.float64, device=device)
    for step in range(start, start + args.steps):
        for g in opt.param_groups:
            g["lr"] = warmup_cosine(step, 5, args.total, 1e-3)
        x, y = data(rng)
        x, y = x.float().to(device), y.to(device)
        pred = model(x)
        loss = F.smooth_l1_loss(pred.double(), y, beta=0.5)
        opt.zero_grad()
        loss.backward()
        gnorm = torch.stack([p.grad.detach().norm() for p in model.parameters()]).norm()
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        opt.step()
        running += loss.detach()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} gnorm {gnorm.item():.3f} lr {opt.param_groups[0]['lr']:.2e}")
    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    mean_loss = (running / args.steps).item()
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": start + args.steps, "loss": mean_loss}
    xm.save(state, args.ckpt)
    with torch.no_grad():
        xv, yv = data(np.random.default_rng(123), n=256)
        err = (model(xv.float().to(device)).double() - yv.to(device)).abs().cpu().numpy()
    print(f"leg done: mean loss {mean_loss:.4f}, val MAE {err.mean():.4f}")


if __name__ == "__main__":
    main()
