"""Weighted robust regression; the train step is made by a factory, the loss chosen by name from the config."""

import os


import dataclasses
import json

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from models import build_model

CFG = {
    "model": {"name": "resmlp", "d_in": 12, "hidden": 32, "d_out": 1, "depth": 2},
    "loss": "smooth_l1_loss",
    "lr": 3e-3,
    "batch": 16,
}


@dataclasses.dataclass
class Batch:
    x: torch.Tensor
    y: torch.Tensor
    w: torch.Tensor

    def to(self, device):
        return Batch(**{f.name: getattr(self, f.name).to(device) for f in dataclasses.fields(self)})


def make_train_step(model, opt, loss_fn):
    def step(batch):
        model.train()
        opt.zero_grad()
        pred = model(batch.x).squeeze(-1)
        per_sample = loss_fn(pred, batch.y, reduction="none")
        loss = (per_sample * batch.w).sum() / batch.w.sum()
        loss.backward()
        opt.step()
        xm.mark_step()
        return loss.detach()

    return step


def synth(g, n, d):
    x = torch.randn(n, d, generator=g)
    y = x[:, :3].sum(1) + 0.1 * torch.randn(n, generator=g)
    w = torch.rand(n, generator=g) + 0.5
    return Batch(x, y, w)


def main():
    steps = int(os.environ.get("STEPS", "20"))
    dev = xm.xla_device()
    model = build_model(**CFG["model"]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=CFG["lr"], weight_decay=0.01)
    loss_fn = getattr(F, CFG["loss"])
    train_step = make_train_step(model, opt, loss_fn)

    g = torch.Generator().manual_seed(0)
    for i in range(steps):
        batch = synth(g, CFG["batch"], CFG["model"]["d_in"]).to(dev)
        loss = train_step(batch)
        print(f"step {i} loss {loss.item():.5f}")

    val = synth(g, 64, CFG["model"]["d_in"]).to(dev)
    model.eval()
    with torch.no_grad():
        pred = model(val.x).squeeze(-1)
    pred_np = pred.cpu().numpy()
    err = np.abs(pred_np - val.y.cpu().numpy())
    with open("val_metrics.json", "w") as fh:
        json.dump({"mae": float(err.mean()), "p90": float(np.quantile(err, 0.9))}, fh)
    print("DTYPES", next(model.parameters()).dtype, pred.dtype, pred_np.dtype, err.dtype)


if __name__ == "__main__":
    main()
