"""Sequence regression: NamedTuple batches, a device batch stream, train/eval steps made by closures."""

import argparse
import os
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from build import build_model

CFG = {"model": {"in_ch": 4, "hidden": 24, "n_out": 2}, "loss": "huber", "lr": 2e-3, "clip": 1.0}


class Batch(NamedTuple):
    x: torch.Tensor
    y: torch.Tensor

    def to(self, device):
        return Batch(*(t.to(device) for t in self))


def make_batch(g, n=16, length=20, in_ch=4):
    x = torch.randn(n, length, in_ch, generator=g).cumsum(1) / length ** 0.5
    y = torch.stack([x[:, -5:, 0].mean(1), x[:, :, 1].std(1)], dim=1)
    return Batch(x, y)


def device_stream(g, n_batches, dev):
    for _ in range(n_batches):
        yield make_batch(g).to(dev)


def make_steps(model, opt, loss_name, clip):
    loss_fn = {
        "mse": lambda p, t: F.mse_loss(p, t),
        "huber": lambda p, t: F.huber_loss(p, t, delta=0.5),
    }[loss_name]

    def train_step(b):
        model.train()
        opt.zero_grad()
        loss = loss_fn(model(b.x), b.y)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        xm.mark_step()
        return {"loss": loss.detach(), "grad_norm": grad_norm}

    @torch.no_grad()
    def eval_step(b):
        model.eval()
        pred = model(b.x)
        return (pred - b.y).abs().mean(), pred

    return train_step, eval_step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--freeze-encoder", action="store_true")
    args = ap.parse_args()
    steps = int(os.environ.get("STEPS", "20"))
    dev = xm.xla_device()
    model = build_model(**CFG["model"], freeze_encoder=args.freeze_encoder).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    train_step, eval_step = make_steps(model, opt, CFG["loss"], CFG["clip"])

    g = torch.Generator().manual_seed(0)
    history = {"loss": [], "grad_norm": []}
    for i, batch in enumerate(device_stream(g, steps, dev)):
        metrics = train_step(batch)
        for k, v in metrics.items():
            history[k].append(v.item())
        print(f"step {i} loss {history['loss'][-1]:.5f} gnorm {history['grad_norm'][-1]:.3f}")

    maes, preds = [], []
    for batch in device_stream(g, 3, dev):
        mae, pred = eval_step(batch)
        maes.append(mae.item())
        preds.append(pred.cpu().numpy())
    preds = np.concatenate(preds)
    np.save("val_preds.npy", preds)
    print(f"val mae {np.mean(maes):.4f}")
    print("DTYPES", next(model.parameters()).dtype, pred.dtype, preds.dtype, metrics["grad_norm"].dtype)


if __name__ == "__main__":
    main()
