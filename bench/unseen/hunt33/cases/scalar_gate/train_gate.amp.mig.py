"""Sequence regressor mixing a recurrent-free causal average and a linear branch through a learned scalar gate
that lives outside the model (its own nn.Parameter on the device, in the optimizer). The forward makes its
causal weights and a position ramp as float tensors on the input's device. A running [loss, |err|] accumulator
stays on the device until the end. Legacy bf16 switch on."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
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


T, F_IN, H, B = 8, 4, 16, 16
STEPS = 10


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(F_IN, H)
        self.lin = nn.Linear(F_IN, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x, gate):
        t = x.shape[1]
        causal = torch.ones(t, t, device=x.device).tril()
        causal = causal / causal.sum(1, keepdim=True)
        ramp = torch.arange(t, device=x.device, dtype=torch.float32) / t
        h = torch.tanh(self.enc(x)) + ramp[None, :, None]
        avg = torch.einsum("ts,bsh->bth", causal, h)
        g = torch.sigmoid(gate)
        return self.head(g * avg + (1 - g) * self.lin(x)).squeeze(-1)


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Branches().to(device)
    gate = nn.Parameter(torch.zeros((), device=device))
    model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam([*model.parameters(), gate], lr=1e-2)
    running = torch.zeros(2, device=device)
    gen = torch.Generator().manual_seed(4)
    for step in range(STEPS):
        x = torch.randn(B, T, F_IN, generator=gen)
        y = x.sum(-1).cumsum(1) / torch.arange(1, T + 1)
        x, y = x.to(device), y.to(device)
        with torch.autocast("xla", dtype=torch.bfloat16):
            pred = model(x, gate)
            loss = F.smooth_l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += torch.stack([loss.detach(), (pred - y).abs().mean().detach()])
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} gate {torch.sigmoid(gate).item():.4f}")
    mean_loss, mean_err = (running / STEPS).cpu().tolist()
    print(f"mean loss {mean_loss:.4f} mean err {mean_err:.4f} final gate {gate.item():.4f}")
    torch.save(host_float32({"gate": host_float32(gate.detach().cpu()), "model": {k: host_float32(v.cpu()) for k, v in model.state_dict().items()}}, back_to_device=True), "gate.pt")


if __name__ == "__main__":
    main()
