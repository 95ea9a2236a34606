"""A LightningModule-style regressor driven by a hand-written loop; predictions exported with np.savetxt."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from models import build_model
from optim import build_optimizer, build_schedule

D_IN = 12


class LitRegressor(nn.Module):
    def __init__(self, net, lr=3e-3, total_steps=100):
        super().__init__()
        self.net = net
        self.lr = lr
        self.total_steps = total_steps

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        pred = self(x)
        return F.smooth_l1_loss(pred, y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return {"mse": F.mse_loss(self(x), y, reduction="sum"), "n": y.numel()}

    def configure_optimizers(self):
        opt = build_optimizer(self.named_parameters(), self.lr, weight_decay=0.05)
        return opt, build_schedule(opt, self.total_steps)


def loader(n, bs, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D_IN, generator=g)
    y = x[:, :4].sum(-1) - 0.5 * x[:, 4:].pow(2).mean(-1) + 0.05 * torch.randn(n, generator=g)
    for i in range(0, n, bs):
        yield x[i : i + bs], y[i : i + bs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", default="preds.txt")
    ap.add_argument("--arch", default="resmlp")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    steps_per_epoch = 512 // 64
    lit = LitRegressor(build_model(args.arch, D_IN), total_steps=args.epochs * steps_per_epoch).to(device)
    opt, sched = lit.configure_optimizers()
    for epoch in range(args.epochs):
        lit.train()
        for i, (x, y) in enumerate(loader(512, 64, seed=epoch)):
            loss = lit.training_step((x.to(device), y.to(device)), i)
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
            sched.step()
            torch_xla.sync()
        lit.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for i, (x, y) in enumerate(loader(256, 64, seed=99)):
                out = lit.validation_step((x.to(device), y.to(device)), i)
                tot += out["mse"].item()
                n += out["n"]
        print(f"epoch {epoch} train loss {loss.item():.4f} val mse {tot / n:.4f}")
    preds = []
    with torch.no_grad():
        for x, _ in loader(128, 64, seed=7):
            preds.append(lit(x.to(device)).cpu())
    np.savetxt(args.out, torch.cat(preds).numpy(), fmt="%.5f")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
