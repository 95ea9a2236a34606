"""Sequence regression: NamedTuple batches, a device batch stream, train/eval steps made by closures."""

import argparse
import os
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from build import build_model


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
        loss = loss_fn(model(b.x), floating_to_bf16(b.y))
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
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
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
        preds.append(host_float32(pred.cpu()).numpy())
    preds = np.concatenate(preds)
    np.save("val_preds.npy", preds)
    print(f"val mae {np.mean(maes):.4f}")
    print("DTYPES", next(model.parameters()).dtype, pred.dtype, preds.dtype, metrics["grad_norm"].dtype)


if __name__ == "__main__":
    main()
