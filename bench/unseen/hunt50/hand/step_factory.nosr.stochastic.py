"""Weighted robust regression; the train step is made by a factory, the loss chosen by name from the config."""

import os


import dataclasses
import json

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from models import build_model


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
        return Batch(**{f.name: floating_to_bf16(getattr(self, f.name).to(device)) for f in dataclasses.fields(self)})


def make_train_step(model, opt, loss_fn):
    def step(batch):
        model.train()
        opt.zero_grad()
        pred = model(batch.x).squeeze(-1)
        per_sample = loss_fn(pred, floating_to_bf16(batch.y), reduction="none")
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
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.AdamW(model.parameters(), lr=CFG["lr"], weight_decay=0.01)
    loss_fn = getattr(F, CFG["loss"])
    train_step = make_train_step(model, opt, loss_fn)

    g = torch.Generator().manual_seed(0)
    for i in range(steps):
        batch = synth(g, CFG["batch"], CFG["model"]["d_in"]).to(dev)
        loss = train_step(batch)
        print(f"step {i} loss {loss.item():.5f}")

    val = floating_to_bf16(synth(g, 64, CFG["model"]["d_in"]).to(dev))
    model.eval()
    with torch.no_grad():
        pred = model(val.x).squeeze(-1)
    pred_np = host_float32(pred.cpu()).numpy()
    err = np.abs(pred_np - host_float32(val.y.cpu()).numpy())
    with open("val_metrics.json", "w") as fh:
        json.dump({"mae": float(err.mean()), "p90": float(np.quantile(err, 0.9))}, fh)
    print("DTYPES", next(model.parameters()).dtype, pred.dtype, pred_np.dtype, err.dtype)


if __name__ == "__main__":
    main()
