"""Config dataclass, registry-built model, a timed step and a TorchScript label-smoothing helper."""
import functools
import os
import time
from dataclasses import dataclass, field

import torch
import torch_xla

from models import build_model


@dataclass
class Config:
    arch: str = "resmlp"
    model_kwargs: dict = field(default_factory=lambda: {"d_in": 20, "hidden": 32, "n_classes": 5})
    lr: float = 1e-2
    smoothing: float = 0.1
    steps: int = int(os.environ.get("STEPS", "8"))
    batch: int = 16


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        wrapper.total += time.perf_counter() - t0
        return out

    wrapper.total = 0.0
    return wrapper


@torch.jit.script
def smooth_targets(y: torch.Tensor, n: int, eps: float) -> torch.Tensor:
    out = torch.full((y.size(0), n), eps / (n - 1), device=y.device)
    out.scatter_(1, y.unsqueeze(1), 1.0 - eps)
    return out


@timed
def train_step(model, opt, x, y, cfg):
    logp = torch.log_softmax(model(x), dim=-1)
    target = smooth_targets(y, cfg.model_kwargs["n_classes"], cfg.smoothing)
    loss = -(target * logp).sum(-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    return loss


@torch.no_grad()
def evaluate(model, x, y):
    pred = model(x).argmax(-1)
    return (pred == y).float().mean()


def main(cfg: Config):
    dev = torch_xla.device()
    torch.manual_seed(0)
    model = build_model(cfg.arch, **cfg.model_kwargs).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True)
    g = torch.Generator().manual_seed(0)
    proto = torch.randn(5, 20, generator=g)
    for step in range(cfg.steps):
        y = torch.randint(0, 5, (cfg.batch,), generator=g)
        x = proto[y] + 0.5 * torch.randn(cfg.batch, 20, generator=g)
        loss = train_step(model, opt, x.to(dev), y.to(dev), cfg)
        print(f"step {step} loss {loss.item():.5f}")
    y = torch.randint(0, 5, (64,), generator=g)
    x = proto[y] + 0.5 * torch.randn(64, 20, generator=g)
    acc = evaluate(model, x.to(dev), y.to(dev))
    print(f"acc {acc.item():.3f} step time {train_step.total / cfg.steps:.3f}s")
    print("DTYPES", next(model.parameters()).dtype, acc.dtype)


if __name__ == "__main__":
    main(Config())
