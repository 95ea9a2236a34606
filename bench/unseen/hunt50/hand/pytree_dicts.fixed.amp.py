"""Multi-task tabular model (click + value heads) on nested dict batches."""

import functools
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
from torch.utils._pytree import tree_map

from utils import move_to, to_numpy


def float64_to_float32(batch):
    """Cast the float64 tensors in `batch` to float32, leaving every other tensor (integer token
    ids and labels, float32, bf16) and everything else as it is.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which a float64
    tensor on the XLA device was computed in low precision; autocast casts float32, not float64):
    `batch` is a tensor, or a list, tuple, namedtuple or dict of them, nested; containers are
    rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.float32) if batch.dtype == torch.float64 else batch
    if isinstance(batch, dict):
        return {key: float64_to_float32(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(float64_to_float32(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(float64_to_float32(value) for value in batch)
    return batch


def float32_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's float64 inputs become float32."""
    return float64_to_float32(args), float64_to_float32(kwargs)


N_IDS, D_DENSE = 50, 8

LOSSES = {
    "ctr": lambda out, tgt: F.binary_cross_entropy_with_logits(out["ctr"], tgt["click"]),
    "value": lambda out, tgt: F.mse_loss(out["value"], tgt["value"]),
}
WEIGHTS = {"ctr": 1.0, "value": 0.5}


class MultiTask(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.emb = nn.EmbeddingBag(N_IDS, hidden, mode="mean")
        self.dense = nn.Linear(D_DENSE, hidden)
        self.trunk = nn.Sequential(nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.ctr_head = nn.Linear(hidden, 1)
        self.value_head = nn.Linear(hidden, 1)

    def forward(self, dense, ids):
        h = self.trunk(self.dense(dense) + self.emb(ids))
        return {"ctr": self.ctr_head(h).squeeze(-1), "value": self.value_head(h).squeeze(-1)}


def compute_loss(model, criteria, batch):
    out = model(**batch["inputs"])
    parts = {name: fn(out, batch["targets"]) for name, fn in criteria.items()}
    total = sum(WEIGHTS[k] * v for k, v in parts.items())
    return total, parts


def make_batch(rng, n):
    dense = rng.standard_normal((n, D_DENSE)).astype(np.float32)
    ids = rng.integers(0, N_IDS, size=(n, 4))
    click = (dense[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(np.float32)
    value = (dense[:, 1] * 2.0 + dense[:, 2]).astype(np.float32)
    return {
        "inputs": {"dense": torch.from_numpy(dense), "ids": torch.from_numpy(ids)},
        "targets": {"click": torch.from_numpy(click), "value": torch.from_numpy(value)},
        "meta": {"n": n},
    }


def main():
    steps = int(os.environ.get("STEPS", "20"))
    dev = xm.xla_device()
    model = MultiTask().to(dev)
    model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    loss_fn = functools.partial(compute_loss, model, LOSSES)
    rng = np.random.default_rng(0)

    for step in range(steps):
        batch = tree_map(lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t, make_batch(rng, 32))
        opt.zero_grad()
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss, parts = loss_fn(batch)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} " + " ".join(f"{k}={v.item():.4f}" for k, v in parts.items()))

    model.eval()
    val = move_to(make_batch(rng, 64), dev)
    with torch.no_grad():
        with torch.autocast("xla", dtype=torch.bfloat16):
            out = model(**val["inputs"])
    scores = to_numpy(out)
    auc_proxy = float(np.corrcoef(scores["ctr"], to_numpy(val["targets"])["click"])[0, 1])
    print(f"val corr(ctr, click) {auc_proxy:.3f}")
    print("DTYPES", next(model.parameters()).dtype, out["ctr"].dtype, scores["ctr"].dtype, scores["value"].dtype)


if __name__ == "__main__":
    main()
