"""Checkpoint averaging: load the last N state dicts, average them on the accelerator, evaluate, save.

Writes `<out>.pt` (float weights as averaged), `<out>.bf16.pt` (an explicit bfloat16 copy for the serving stack) and
`<out>.json` (validation metrics). If the run directory holds no checkpoints it makes N (seeded), so it runs anywhere.
"""
import argparse
import glob
import json
import os

import torch
import torch.nn as nn
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


ap = argparse.ArgumentParser()
ap.add_argument("--ckpt-dir", default="/tmp/avg_ckpts")
ap.add_argument("--n", type=int, default=3)
ap.add_argument("--out", default="/tmp/avg_ckpts/averaged")
args = ap.parse_args()


def make_model():
    return nn.Sequential(nn.Linear(12, 48), nn.LayerNorm(48), nn.GELU(), nn.Linear(48, 3))


def ensure_checkpoints(d, n):
    os.makedirs(d, exist_ok=True)
    if len(glob.glob(os.path.join(d, "step_*.pt"))) >= n:
        return
    torch.manual_seed(0)
    base = make_model()
    for i in range(n):
        with torch.no_grad():
            for prm in base.parameters():
                prm.add_(0.01 * torch.randn_like(prm))
        torch.save(host_float32(base.state_dict(), back_to_device=True), os.path.join(d, f"step_{1000 * (i + 1):06d}.pt"))


ensure_checkpoints(args.ckpt_dir, args.n)
paths = sorted(glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")))[-args.n:]
dev = xm.xla_device()

avg = None
for path in paths:
    sd = torch.load(path, map_location="cpu")
    if avg is None:
        avg = {k: floating_to_bf16(v.to(dev)).clone() for k, v in sd.items()}
    else:
        for k, v in sd.items():
            avg[k] += floating_to_bf16(v.to(dev))
for k in avg:
    avg[k] /= len(paths)
xm.mark_step()

model = make_model().to(dev)
model.to(torch.bfloat16)
model.load_state_dict(avg)
model.eval()

gen = torch.Generator().manual_seed(7)
xv = torch.randn(64, 12, generator=gen)
yv = (xv[:, :3].sum(dim=1) > 0).long() + (xv[:, 3] > 1).long()
with torch.no_grad():
    logits = model(xv.to(dev).to(torch.bfloat16))
    nll = nn.functional.cross_entropy(logits, yv.to(dev))
    acc = (logits.argmax(dim=1).cpu() == yv).float().mean()
print("DTYPES", next(model.parameters()).dtype, avg["0.weight"].dtype, logits.dtype)

torch.save({k: host_float32(v.cpu()) for k, v in avg.items()}, args.out + ".pt")
torch.save({k: v.to(torch.bfloat16).cpu() for k, v in model.state_dict().items()}, args.out + ".bf16.pt")
with open(args.out + ".json", "w") as f:
    json.dump({"n_averaged": len(paths), "val_nll": nll.item(), "val_acc": acc.item()}, f)
f32 = torch.load(args.out + ".pt")
b16 = torch.load(args.out + ".bf16.pt")
print("SAVED", f32["0.weight"].dtype, b16["0.weight"].dtype, "nll", round(nll.item(), 4), "acc", acc.item())
