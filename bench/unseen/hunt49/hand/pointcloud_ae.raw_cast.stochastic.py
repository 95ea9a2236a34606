"""EdgeConv autoencoder on synthetic shapes: FPS to a fixed size, decode M points, Chamfer loss."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

from pc_ops import chamfer, farthest_point_sample, gather_neighbours, knn


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


class EdgeConv(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.k = k
        self.mlp = nn.Sequential(nn.Linear(2 * cin, cout), nn.LayerNorm(cout), nn.GELU())

    def forward(self, x, idx):
        nb = gather_neighbours(x, idx)
        center = x.unsqueeze(2).expand_as(nb)
        e = self.mlp(torch.cat([center, nb - center], dim=-1))
        return e.max(dim=2).values


class PointAE(nn.Module):
    def __init__(self, k=8, h=32, m_out=32):
        super().__init__()
        self.k = k
        self.m_out = m_out
        self.ec1 = EdgeConv(3, h, k)
        self.ec2 = EdgeConv(h, h, k)
        self.dec = nn.Sequential(nn.Linear(h, 64), nn.GELU(), nn.Linear(64, m_out * 3))

    def forward(self, pts):
        idx = knn(pts, self.k)
        f = self.ec1(pts, idx)
        f = self.ec2(f, knn(f, self.k))
        code = f.max(dim=1).values
        return self.dec(code).view(-1, self.m_out, 3), code


def shapes(rng, b, n):
    out = np.empty((b, n, 3), dtype=np.float32)
    for i in range(b):
        u = rng.uniform(0, 2 * np.pi, n)
        v = rng.uniform(-1, 1, n)
        r = 0.5 + 0.5 * rng.random()
        if i % 2:
            out[i] = np.stack([r * np.cos(u), r * np.sin(u), v], 1)
        else:
            s = np.sqrt(1 - v ** 2)
            out[i] = np.stack([r * s * np.cos(u), r * s * np.sin(u), r * v], 1)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--points", type=int, default=128)
    p.add_argument("--sampled", type=int, default=32)
    p.add_argument("--bs", type=int, default=4)
    p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "100")))
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = PointAE(m_out=args.sampled).to(dev)
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    for step in range(1, args.steps + 1):
        raw = torch.from_numpy(shapes(rng, args.bs, args.points)).to(dev, dtype=torch.bfloat16)
        fps = farthest_point_sample(raw, args.sampled)
        target = torch.gather(raw, 1, fps.unsqueeze(-1).expand(-1, -1, 3))
        recon, code = model(target)
        loss = chamfer(recon, target).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} chamfer {loss.item():.5f}")

    model.eval()
    with torch.no_grad():
        test = torch.from_numpy(shapes(rng, 2, args.points)).to(dev, dtype=torch.bfloat16)
        sub = torch.gather(test, 1, farthest_point_sample(test, args.sampled).unsqueeze(-1).expand(-1, -1, 3))
        recon, code = model(sub)
        per_shape = chamfer(recon, sub).tolist()
        codes = host_float32(code.cpu()).numpy()
    print("test chamfer", [round(c, 5) for c in per_shape])
    print("DTYPES", next(model.parameters()).dtype, recon.dtype, codes.dtype)


if __name__ == "__main__":
    main()
