"""Regression with an optimizer class written here (sign-of-momentum updates with decoupled decay), weight
averaging through torch.optim.swa_utils.AveragedModel, float64 per-sample loss weights from NumPy, and the averaged
model's predictions taken to NumPy at the end. Legacy switch: XLA_DOWNCAST_BF16 (f32 -> bf16, f64 -> f32)."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.optim.swa_utils import AveragedModel


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


N, D, H = 32, 8, 20
STEPS = 10


class SignMomentum(torch.optim.Optimizer):
    """m <- beta * m + (1 - beta) * g;  p <- p * (1 - lr * wd) - lr * sign(m)."""

    def __init__(self, params, lr=1e-2, beta=0.9, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, beta=beta, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "m" not in state:
                    state["m"] = torch.zeros_like(p)
                m = state["m"]
                m.mul_(group["beta"]).add_(p.grad, alpha=1 - group["beta"])
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(torch.sign(m), alpha=-group["lr"])
        return None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, H)
        self.fc2 = nn.Linear(H, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        h = F.silu(self.fc1(x))
        h = h + F.silu(self.fc2(h))
        return self.head(h).squeeze(-1)


def data(rng):
    x = rng.standard_normal((N, D))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]
    return torch.from_numpy(x).float(), torch.from_numpy(y).float()


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    rng = np.random.default_rng(3)
    wts = downcast_floating(torch.from_numpy(np.linspace(0.5, 1.5, N)).to(device))
    model = Net().to(device)
    avg = AveragedModel(model)
    model.to(torch.bfloat16)
    opt = SignMomentum(model.parameters(), lr=5e-3, weight_decay=1e-3)
    for step in range(STEPS):
        x, y = data(rng)
        x, y = x.to(device, dtype=torch.bfloat16), y.to(device, dtype=torch.bfloat16)
        pred = model(x)
        loss = (wts * (pred - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 3:
            avg.update_parameters(model)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    x, y = data(rng)
    with torch.no_grad():
        out = avg(x.to(device))
        err = (wts * (out - y.to(device, dtype=torch.bfloat16)).abs()).mean()
    preds = host_float32(out.cpu()).numpy()
    print("averaged model: mae", err.item(), "first", preds[:3], "n_averaged", int(avg.n_averaged.item()))
    np.save("swa_preds.npy", preds)


if __name__ == "__main__":
    main()
