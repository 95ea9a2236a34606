"""Sequence regressor: cumsum/cumprod features in forward, hand-written weighted Huber loss with numpy
per-sample weights, gradient accumulation over micro-batches of different sizes."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


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


def host_float32(data, back_to_device=False):
    """Return `data` with every bf16 tensor in it copied to the host and made float32 there (and,
    with `back_to_device`, moved back to the device it was on); integer, float32 and float64
    tensors and everything else but modules are returned as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor that left the XLA device was float32): `data` is a tensor, or a list, tuple,
    namedtuple or dict of them (a state dict, a checkpoint), nested; containers are copied with
    their type, a state dict's metadata kept, so `load_state_dict` reads the result as before.
    `torch.save` writes an XLA tensor as one: `back_to_device=True` keeps it so, as the legacy
    checkpoint held it. A module is copied, its bf16 parameters and buffers made float32 where they
    are, without the input hooks bf16-migrate registered on it (functions of the migrated script,
    which a `torch.save`d module would need to be loaded anywhere else).
    """
    import copy

    if isinstance(data, torch.nn.Module):
        module = copy.deepcopy(data)
        for sub in module.modules():
            for key, hook in list(sub._forward_pre_hooks.items()):
                if getattr(hook, "__name__", None) in ("bf16_inputs_hook", "float32_inputs_hook"):
                    del sub._forward_pre_hooks[key]
                    sub._forward_pre_hooks_with_kwargs.pop(key, None)
        return module._apply(lambda t: t.float() if t.dtype == torch.bfloat16 else t)
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.bfloat16:
            return data
        host = data.cpu().float()
        return host.to(data.device) if back_to_device else host
    if isinstance(data, dict):
        out = copy.copy(data)
        for key, value in data.items():
            out[key] = host_float32(value, back_to_device)
        return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(host_float32(value, back_to_device) for value in data))
    if isinstance(data, (list, tuple)):
        return type(data)(host_float32(value, back_to_device) for value in data)
    return data


MICRO = [12, 7, 5]  # micro-batch sizes of one optimizer step
STEPS = 10
T = 8


class CumNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 16)
        self.gate = nn.Linear(16, 16)
        self.out = nn.Linear(32, 1)

    def forward(self, x):  # x: (B, T, 3)
        h = torch.tanh(self.inp(x))
        run = torch.cumsum(h, dim=1) / torch.arange(1, x.size(1) + 1, device=x.device).view(1, -1, 1)
        decay = torch.cumprod(torch.sigmoid(self.gate(h)), dim=1)
        feat = torch.cat([run[:, -1], (decay * h).sum(1)], dim=-1)
        return self.out(feat).squeeze(-1)


def huber(pred, target, w, delta=0.5):
    err = pred - target
    quad = 0.5 * err.pow(2)
    lin = delta * (err.abs() - 0.5 * delta)
    per = torch.where(err.abs() <= delta, quad, lin)
    return (per * w).sum() / w.sum()


def batch(rng, n):
    x = rng.standard_normal((n, T, 3))
    y = np.cumsum(x[:, :, 0], axis=1)[:, -1] * 0.3 + np.prod(np.tanh(x[:, :2, 1]), axis=1)
    w = rng.uniform(0.5, 1.5, size=n)  # float64 per-sample weights
    return torch.from_numpy(x).float(), torch.from_numpy(y).float(), torch.from_numpy(w)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = CumNet().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        opt.zero_grad()
        total = sum(MICRO)
        for n in MICRO:
            x, y, w = batch(rng, n)
            x, y, w = x.to(dev), y.to(dev), float64_to_float32(w.to(dev))
            with torch.autocast("xla", dtype=torch.bfloat16):
                pred = model(x)
            loss = huber(pred, y.to(pred.dtype), w.to(pred.dtype)) * (n / total)
            loss.backward()
        opt.step()
        xm.mark_step()
    x, y, w = batch(rng, 32)
    with torch.no_grad():
        with torch.autocast("xla", dtype=torch.bfloat16):
            pred = model(x.to(dev))
    resid = (host_float32(pred.cpu()) - y).numpy()
    print("eval mae", float(np.abs(resid).mean()), resid.dtype)


if __name__ == "__main__":
    main()
