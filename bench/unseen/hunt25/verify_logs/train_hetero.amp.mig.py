"""Heteroscedastic regression: an MLP predicts a mean and a log-variance per output, trained with a
hand-written Gaussian NLL (plus F.gaussian_nll_loss logged as a check), gradient clipping whose returned
norm is logged with .item(), and a linear LR warmup computed in Python. At the end the predictive
intervals are evaluated on the host."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
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


STEPS = 10
WARMUP = 4
BASE_LR = 4e-3
OUT = 2


class MeanVar(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(3, 48), nn.SiLU(), nn.Linear(48, 48), nn.SiLU())
        self.mu = nn.Linear(48, OUT)
        self.logvar = nn.Linear(48, OUT)

    def forward(self, x):
        h = self.trunk(x)
        return self.mu(h), self.logvar(h).clamp(-6.0, 4.0)


def nll(mu, logvar, y):
    inv = torch.exp(-logvar)
    return 0.5 * (logvar + (y - mu) ** 2 * inv).mean()


def sample(rng, n):
    x = rng.uniform(-2, 2, size=(n, 3)).astype(np.float32)
    noise = (0.1 + 0.4 * np.abs(x[:, :1])) * rng.standard_normal((n, OUT)).astype(np.float32)
    y = np.stack([np.sin(x[:, 0]) + 0.5 * x[:, 1], x[:, 2] ** 2 - 0.3 * x[:, 0]], 1) + noise
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


def lr_at(step):
    return BASE_LR * min(1.0, (step + 1) / WARMUP)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = MeanVar().to(dev)
    model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam(model.parameters(), lr=BASE_LR)
    history = []
    for step in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = sample(rng, 64)
        x, y = x.to(dev), float64_to_float32(y.to(dev))
        with torch.autocast("xla", dtype=torch.bfloat16):
            mu, logvar = model(x)
            loss = nll(mu, logvar, y)
        with torch.no_grad():
            ref = F.gaussian_nll_loss(mu, y, logvar.exp(), full=False)
        opt.zero_grad()
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        xm.mark_step()
        history.append((step, loss.item(), ref.item(), gnorm.item()))
    for h in history[::3]:
        print("step %d nll %.4f ref %.4f gnorm %.3f" % h)

    x, y = sample(rng, 128)
    with torch.no_grad():
        with torch.autocast("xla", dtype=torch.bfloat16):
            mu, logvar = model(x.to(dev))
        sigma = torch.exp(0.5 * logvar)
    lo = (mu - 1.96 * sigma).cpu().float().numpy()
    hi = (mu + 1.96 * sigma).cpu().float().numpy()
    cover = ((y.numpy() >= lo) & (y.numpy() <= hi)).mean(0)
    print("95% interval coverage per output", np.round(cover, 3), lo.dtype)


if __name__ == "__main__":
    main()
