"""LR range test, then a short training run at the learning rate it picks.

The model's and the optimizer's states are snapshotted with deepcopy before the sweep and restored after it, so the
real run starts from the same initialisation. The sweep's learning rates live in a device tensor (log-spaced) and the
smoothed loss is tracked on the device.
"""
import argparse
import copy
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
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


ap = argparse.ArgumentParser()
ap.add_argument("--trials", type=int, default=16)
ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "6")))
args = ap.parse_args()


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def data(gen, n=32):
    x = torch.randn(n, 1, 16, 16, generator=gen)
    y = (x[:, 0, :8].mean(dim=(1, 2)) * 20).long().clamp(-5, 4) + 5
    return x, y


dev = xm.xla_device()
torch.manual_seed(0)
model = SmallCNN().to(dev)
model.to(torch.bfloat16)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

init_model = copy.deepcopy(model.state_dict())
init_opt = copy.deepcopy(opt.state_dict())

lrs = torch.logspace(-4, 0, args.trials, device=dev, dtype=torch.bfloat16)
smoothed = torch.zeros((), device=dev, dtype=torch.bfloat16)
beta = 0.8
history = []
gen = torch.Generator().manual_seed(3)
best = math.inf
for i in range(args.trials):
    for g in opt.param_groups:
        g["lr"] = lrs[i].item()
    x, y = data(gen)
    x, y = x.to(dev, dtype=torch.bfloat16), y.to(dev)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    smoothed = beta * smoothed + (1 - beta) * loss.detach()
    debiased = smoothed / (1 - beta ** (i + 1))
    xm.mark_step()
    val = debiased.item()
    history.append((lrs[i].item(), val))
    if val > 4 * best:
        break
    best = min(best, val)

lr_curve = torch.stack([lrs[: len(history)], torch.tensor([h[1] for h in history], device=dev, dtype=torch.bfloat16)])
slopes = lr_curve[1, 1:] - lr_curve[1, :-1]
pick = lr_curve[0, int(slopes.argmin().item())] / 10
chosen = pick.item()
print(f"swept {len(history)} rates, chosen lr {chosen:.2e}", "DTYPES", lrs.dtype, smoothed.dtype, lr_curve.dtype)

model.load_state_dict(init_model)
opt.load_state_dict(init_opt)
for g in opt.param_groups:
    g["lr"] = chosen
gen = torch.Generator().manual_seed(5)
for step in range(args.steps):
    x, y = data(gen)
    x, y = x.to(dev, dtype=torch.bfloat16), y.to(dev)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.5f}")
torch.save(host_float32({"lr_curve": lr_curve.cpu().float(), "model": model.state_dict()}, back_to_device=True), "/tmp/lr_find_result.pt")
res = torch.load("/tmp/lr_find_result.pt")
print("SAVED", res["lr_curve"].dtype, res["model"]["fc.weight"].dtype)
