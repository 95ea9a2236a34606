"""Fit a coordinate MLP with random Fourier features to a synthetic 2-D image. The projection matrix is a buffer the
sweep attaches after the model is on the device (its scale is the swept parameter), so it is registered after the
model's move and after the optimizer is built. The only output besides the log is the rendered image (.npy)."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla


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


class CoordMLP(nn.Module):
    def __init__(self, n_freq=32, hid=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * n_freq, hid), nn.ReLU(), nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, 1))

    def forward(self, xy):
        proj = 2 * math.pi * xy @ self.B
        return self.net(torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)).squeeze(-1)


def target_image(n):
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, n), torch.linspace(-1, 1, n), indexing="ij")
    img = torch.sin(6 * xs) * torch.cos(4 * ys) + (xs * xs + ys * ys < 0.3).float()
    return torch.stack([xs, ys], -1).reshape(-1, 2), img.reshape(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=4.0)
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "30")))
    ap.add_argument("--res", type=int, default=24)
    ap.add_argument("--out", default="/tmp/hunt42_render.npy")
    args = ap.parse_args()

    dev = torch_xla.device()
    torch.manual_seed(0)
    coords, img = target_image(args.res)
    coords, img = coords.to(dev), img.to(dev)

    model = CoordMLP().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.register_buffer("B", (torch.randn(2, 32) * args.scale).to(dev))

    for step in range(args.steps):
        pick = torch.randperm(coords.shape[0])[:128].to(dev)
        with torch.autocast("xla", dtype=torch.bfloat16):
            pred = model(coords[pick])
            loss = ((pred - img[pick]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        if step % 5 == 0:
            print(f"step {step} mse {loss.item():.5f}")

    with torch.no_grad():
        render = model(coords)
        psnr = -10 * torch.log10(((render - img) ** 2).mean())
    print("DTYPES", model.net[0].weight.dtype, model.B.dtype, render.dtype)
    print(f"psnr {psnr.item():.2f}")
    np.save(args.out, host_float32(render.reshape(args.res, args.res).cpu()).numpy())


if __name__ == "__main__":
    main()
