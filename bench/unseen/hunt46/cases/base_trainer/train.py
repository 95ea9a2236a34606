"""Regression with a weighted loss, built on trainer_base.BaseTrainer."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from trainer_base import BaseTrainer

STEPS = int(os.environ.get("STEPS", "8"))


class WeightedRegressionTrainer(BaseTrainer):
    def build_model(self):
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 1))

    def configure_optimizers(self):
        decay = [p for n, p in self.model.named_parameters() if n.endswith("weight")]
        no_decay = [p for n, p in self.model.named_parameters() if not n.endswith("weight")]
        return torch.optim.AdamW(
            [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
            lr=self.cfg["lr"],
        )

    def compute_loss(self, out, batch):
        err = F.smooth_l1_loss(out.squeeze(-1), batch["y"], reduction="none")
        return (err * batch["w"]).sum() / batch["w"].sum()


def make_batches(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.standard_normal((16, 12)).astype(np.float32)
        y = x[:, :3].sum(1) + 0.1 * rng.standard_normal(16)
        w = rng.uniform(0.5, 1.5, 16)
        out.append({"x": torch.from_numpy(x), "y": torch.from_numpy(y), "w": torch.from_numpy(w)})
    return out


if __name__ == "__main__":
    trainer = WeightedRegressionTrainer({"lr": 3e-3})
    trainer.fit(make_batches(STEPS, 0), make_batches(2, 1))
    p = next(trainer.model.parameters())
    preds = trainer.model(trainer.to_device(make_batches(1, 2)[0])["x"]).detach().cpu().numpy()
    print("DTYPES", p.dtype, preds.dtype)
