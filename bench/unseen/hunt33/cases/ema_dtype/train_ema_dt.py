"""Regression MLP with an EMA shadow of its parameters kept in a plain dict of SHADOW_DTYPE (made after the move), updated in
place each step, and evaluated through torch.func.functional_call(model, shadow, ...). The EMA predictions go to
NumPy at the end. Legacy bf16 switch on."""
import json
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.func import functional_call

D, H, N = 8, 32, 64
STEPS = 10
DECAY = 0.9
SHADOW_DTYPE = torch.float32


def make_data(gen):
    x = torch.randn(N, D, generator=gen)
    w = torch.linspace(-1.0, 1.0, D)
    y = torch.sin(x @ w)[:, None] + 0.05 * torch.randn(N, 1, generator=gen)
    return x, y


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(D, H), nn.SiLU(), nn.Linear(H, H), nn.SiLU(), nn.Linear(H, 1)).to(device)
    shadow = {n: p.detach().to(SHADOW_DTYPE, copy=True) for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(3)
    xv, yv = make_data(gen)
    xv, yv = xv.to(device), yv.to(device)
    history = []
    for step in range(STEPS):
        x, y = make_data(gen)
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for n, p in model.named_parameters():
                shadow[n].mul_(DECAY).add_(p.detach(), alpha=1.0 - DECAY)
        xm.mark_step()
        if step % 3 == 2:
            with torch.no_grad():
                ema_loss = F.mse_loss(functional_call(model, shadow, (xv,)), yv)
            history.append({"step": step, "loss": loss.item(), "ema_val": ema_loss.item()})
            print(f"step {step} loss {loss.item():.4f} ema_val {ema_loss.item():.4f}")
    with torch.no_grad():
        pred = functional_call(model, shadow, (xv,))
    np.save("ema_pred.npy", pred.cpu().numpy())
    with open("ema_hist.json", "w") as fh:
        json.dump(history, fh)


if __name__ == "__main__":
    main()
