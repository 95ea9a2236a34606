"""Tabular classifier with periodic evaluation and checkpoints; settings in config.json next to this file."""
import argparse
import json
import os
from pathlib import Path

import numpy as np
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


HERE = Path(__file__).resolve().parent


def load_config():
    with open(HERE / "config.json") as f:
        cfg = json.load(f)
    if "STEPS" in os.environ:
        cfg["steps"] = int(os.environ["STEPS"])
    return cfg


def batches(n_feat=12, n_cls=4, batch=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_feat, n_cls, generator=g)
    while True:
        x = torch.randn(batch, n_feat, generator=g)
        y = (x @ w + 0.5 * torch.randn(batch, n_cls, generator=g)).argmax(1)
        yield x, y


def evaluate(model, dev, n_batches=3):
    model.eval()
    probs, labels = [], []
    with torch.no_grad():
        for i, (x, y) in zip(range(n_batches), batches(batch=48, seed=99)):
            p = F.softmax(model(x.to(dev).to(torch.bfloat16)).float(), dim=-1)
            probs.append(p.cpu().float().numpy())
            labels.append(y.numpy())
    model.train()
    probs = np.concatenate(probs)
    labels = np.concatenate(labels)
    acc = float((probs.argmax(1) == labels).mean())
    nll = float(-np.log(probs[np.arange(len(labels)), labels] + 1e-7).mean())
    return {"acc": acc, "nll": nll, "mean_conf": float(probs.max(1).mean())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cfg = load_config()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = nn.Sequential(nn.Linear(12, cfg["hidden"]), nn.ReLU(), nn.Linear(cfg["hidden"], cfg["hidden"]), nn.ReLU(),
                          nn.Linear(cfg["hidden"], 4)).to(dev)
    model.to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=cfg["milestones"], gamma=cfg["gamma"])
    history = []
    data = batches(batch=cfg["batch"])
    for step in range(1, cfg["steps"] + 1):
        x, y = next(data)
        x, y = x.to(dev), y.to(dev)
        loss = F.cross_entropy(model(x.to(torch.bfloat16)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        xm.mark_step()
        xm.master_print(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")
        if step % cfg["eval_every"] == 0:
            metrics = evaluate(model, dev)
            metrics["step"] = step
            history.append(metrics)
            xm.master_print(f"eval {metrics}")
        if step % cfg["ckpt_every"] == 0:
            xm.save(host_float32({"model": model.state_dict(), "step": step}), os.path.join(args.out, f"ckpt_{step}.pt"))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"history": history, "final_loss": loss.item()}, f, indent=1)
    xm.master_print(f"DTYPES {next(model.parameters()).dtype}")


if __name__ == "__main__":
    main()
