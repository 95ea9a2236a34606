"""Churn classifier on a tabular table built with NumPy (float64 throughout, as pandas hands it over).

Per-feature mean/std computed once on the host and registered as the model's buffers; class weights from np.bincount;
a collate_fn that stacks rows with np.stack and builds the batch with torch.tensor.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, TensorDataset


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


def downcast_floating(batch):
    """Cast `batch` as the legacy bf16 downcast environment switch held it on the device: float64
    tensors to float32, other floating tensors to torch.bfloat16; integer tensors and everything else
    as they are.

    Added by bf16-migrate (replacing the legacy bf16 downcast environment switch, under which a float32
    tensor on the XLA device was bf16 and a float64 one float32) where the code does not tell the
    dtype: `batch` is a tensor, or a list, tuple, namedtuple or dict of them, nested; containers are
    rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        if batch.dtype == torch.float64:
            return batch.to(torch.float32)
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: downcast_floating(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(downcast_floating(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(downcast_floating(value) for value in batch)
    return batch


def downcast_bf16(module):
    """Cast `module` in place as the legacy bf16 downcast environment switch held it on the XLA
    device: float32 parameters and buffers become torch.bfloat16, float64 ones float32, every other
    one (integer buffers) stays as it is. Returns `module`.

    Added by bf16-migrate in place of `module.to(torch.bfloat16)` for a model with float64 state (a
    submodule built in float64, a parameter or buffer made from float64 data), which that cast would
    round to bf16.
    """
    dtypes = {torch.float32: torch.bfloat16, torch.float64: torch.float32}
    return module._apply(lambda t: t.to(dtypes[t.dtype]) if t.dtype in dtypes else t)


ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=1)
ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
args = ap.parse_args()

rng = np.random.default_rng(0)
N, D = 512, 10
table = rng.normal(size=(N, D)) * rng.uniform(0.5, 30.0, size=D) + rng.uniform(-5, 50, size=D)
logit = table[:, 0] / 30 - table[:, 3] / 20 + 0.5 * rng.normal(size=N)
labels = (logit > np.quantile(logit, 0.8)).astype(np.int64)

mu = table.mean(axis=0)
sd = table.std(axis=0) + 1e-6
counts = np.bincount(labels, minlength=2)
class_w = counts.sum() / (2.0 * counts)


class Scaler(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.from_numpy(mean))
        self.register_buffer("std", torch.from_numpy(std))

    def forward(self, x):
        return (x - self.mean) / self.std


class ChurnNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = Scaler(mu, sd)
        self.mlp = nn.Sequential(nn.Linear(D, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))

    def forward(self, x):
        return self.mlp(self.scale(x).to(self.mlp[0].weight.dtype))


def collate(rows):
    xs, ys = zip(*rows)
    return torch.tensor(np.stack([r.numpy() for r in xs])), torch.tensor(np.array([int(y) for y in ys]))


ds = TensorDataset(torch.from_numpy(table), torch.from_numpy(labels))
loader = DataLoader(ds, batch_size=32, shuffle=True, collate_fn=collate, generator=torch.Generator().manual_seed(0))

dev = xm.xla_device()
torch.manual_seed(0)
model = ChurnNet().to(dev)
weights = downcast_floating(torch.tensor(class_w, device=dev))
criterion = nn.CrossEntropyLoss(weight=weights.to(torch.bfloat16))
downcast_bf16(model)
model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)

step = 0
for epoch in range(args.epochs):
    for xb, yb in loader:
        xb, yb = xb.to(dev), yb.to(dev)
        opt.zero_grad()
        loss = criterion(model(xb), downcast_floating(yb))
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
        step += 1
        if step >= args.steps:
            break

model.eval()
with torch.no_grad():
    probs = torch.softmax(model(torch.from_numpy(table[:64]).to(dev)), dim=1)[:, 1].cpu().float().numpy()
print("DTYPES", model.scale.mean.dtype, model.mlp[0].weight.dtype, weights.dtype, probs.dtype)
print("mean churn prob", float(probs.mean()))
