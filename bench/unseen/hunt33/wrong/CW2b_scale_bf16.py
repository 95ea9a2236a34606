"""Polynomial-feature regression after XLA_DOWNCAST_BF16 (float64 on the device becomes f32, f32 becomes bf16):
the float64 NumPy design matrix is built on the device with torch.tensor(..., device=device), the f32 model
trains on it; a float64 per-feature scale made on the device divides the input; the epoch's squared error is
accumulated on the device and the learned weights go to NumPy at the end."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


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


N, K, STEPS = 48, 5, 10


def design(rng):
    t = rng.uniform(-1.0, 1.0, size=N)
    xs = np.stack([t ** k for k in range(1, K + 1)], axis=1)
    ys = np.cos(2.0 * t) + 0.01 * rng.standard_normal(N)
    return xs, ys


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(K, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    model.to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scale = torch.tensor([1.0 / k for k in range(1, K + 1)], dtype=torch.bfloat16, device=device)
    rng = np.random.default_rng(1)
    sq_err = torch.zeros((), device=device, dtype=torch.bfloat16)
    for step in range(STEPS):
        xs, ys = design(rng)
        x = downcast_floating(torch.tensor(xs, device=device))
        y = downcast_floating(torch.tensor(ys, device=device))
        pred = model((x / scale).to(torch.bfloat16)).squeeze(-1)
        loss = ((pred - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sq_err += loss.detach()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    print(f"mean sq err {(sq_err / STEPS).item():.5f}")
    np.save("w.npy", host_float32(model[0].weight.detach().cpu()).numpy())


if __name__ == "__main__":
    main()
