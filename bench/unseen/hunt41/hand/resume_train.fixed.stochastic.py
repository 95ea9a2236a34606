"""Train a small GRU forecaster, checkpointing everything needed to resume bit-for-bit.

If the checkpoint exists the run continues from it (loaded on the host, moved to the device piece by piece) (model, Adam moments, scheduler, GradScaler-style loss scale,
RNG state and a step counter held as a device tensor); otherwise it starts fresh. It always saves at the end.
"""
import argparse
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


p = argparse.ArgumentParser()
p.add_argument("--ckpt", default="/tmp/resume_ckpt.pt")
p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
args = p.parse_args()


class Forecaster(nn.Module):
    def __init__(self, n_in=4, hidden=32):
        super().__init__()
        self.gru = nn.GRU(n_in, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def batch(gen, n=16, t=12):
    x = torch.randn(n, t, 4, generator=gen)
    y = x[:, -3:, 0].mean(dim=1) + 0.1 * torch.randn(n, generator=gen)
    return x, y


device = xm.xla_device()
torch.manual_seed(0)
model = Forecaster()
model.to(device)
model.to(torch.bfloat16)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)
loss_scale = torch.tensor(1.0, device=device, dtype=torch.bfloat16)
step = torch.zeros((), device=device, dtype=torch.bfloat16)
gen = torch.Generator().manual_seed(1)

if os.path.exists(args.ckpt):
    ckpt = torch.load(args.ckpt, map_location="cpu")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])  # moves Adam's moments to the parameters' device
    scheduler.load_state_dict(ckpt["scheduler"])
    loss_scale = floating_to_bf16(ckpt["loss_scale"].to(device))
    step = floating_to_bf16(ckpt["step"].to(device))
    gen.set_state(ckpt["rng"])
    print(f"resumed at step {int(step.item())}, loss scale {loss_scale.item():.1f}")

loss_fn = nn.SmoothL1Loss()
for _ in range(args.steps):
    x, y = batch(gen)
    x, y = x.to(device), y.to(device)
    optimizer.zero_grad()
    pred = model(x.to(torch.bfloat16))
    loss = loss_fn(pred, y.to(torch.bfloat16))
    (loss * loss_scale).backward()
    for prm in model.parameters():
        prm.grad.div_(loss_scale)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    step += 1
    xm.mark_step()
    print(f"step {int(step.item())} loss {loss.item():.5f}")

exp_avg = next(iter(optimizer.state.values()))["exp_avg"]
print("DTYPES", next(model.parameters()).dtype, exp_avg.dtype, step.dtype, loss_scale.dtype)
xm.save(
    host_float32({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "loss_scale": loss_scale,
        "step": step,
        "rng": gen.get_state(),
    }),
    args.ckpt,
)
saved = torch.load(args.ckpt)
print("SAVED", saved["model"]["head.weight"].dtype, saved["optimizer"]["state"][0]["exp_avg"].dtype, saved["step"].dtype)
