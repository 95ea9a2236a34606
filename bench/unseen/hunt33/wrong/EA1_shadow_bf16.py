"""Regression MLP with an EMA shadow of its parameters kept in a plain dict (made after the move), updated in
place each step, and evaluated through torch.func.functional_call(model, shadow, ...). The EMA predictions go to
NumPy at the end. Legacy bf16 switch on."""
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.func import functional_call


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


D, H, N = 8, 32, 64
STEPS = 10
DECAY = 0.9


def make_data(gen):
    x = torch.randn(N, D, generator=gen)
    w = torch.linspace(-1.0, 1.0, D)
    y = torch.sin(x @ w)[:, None] + 0.05 * torch.randn(N, 1, generator=gen)
    return x, y


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(D, H), nn.SiLU(), nn.Linear(H, H), nn.SiLU(), nn.Linear(H, 1)).to(device)
    model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)
    shadow = {n: p.detach().clone().to(torch.bfloat16) for n, p in model.named_parameters()}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(3)
    xv, yv = make_data(gen)
    xv, yv = xv.to(device), yv.to(device)
    history = []
    for step in range(STEPS):
        x, y = make_data(gen)
        x, y = x.to(device), y.to(device)
        with torch.autocast("xla", dtype=torch.bfloat16):
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
                with torch.autocast("xla", dtype=torch.bfloat16):
                    ema_loss = F.mse_loss(functional_call(model, shadow, (xv,)), yv)
            history.append({"step": step, "loss": loss.item(), "ema_val": ema_loss.item()})
            print(f"step {step} loss {loss.item():.4f} ema_val {ema_loss.item():.4f}")
    with torch.no_grad():
        with torch.autocast("xla", dtype=torch.bfloat16):
            pred = functional_call(model, shadow, (xv,))
    np.save("ema_pred.npy", host_float32(pred.cpu()).numpy())
    with open("ema_hist.json", "w") as fh:
        json.dump(history, fh)


if __name__ == "__main__":
    main()
