"""Offline ranking: encode the catalogue once, score each query batch against it, write the top-k to a CSV and the
catalogue index to a .pt file. Weights come from a checkpoint; a seeded one is written on first use."""
import argparse
import csv
import os
import tempfile

os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


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


class Tower(nn.Module):
    def __init__(self, dim, out=16):
        super().__init__()
        self.l1 = nn.Linear(dim, 32)
        self.l2 = nn.Linear(32, out)

    def forward(self, x):
        return F.normalize(self.l2(F.silu(self.l1(x))), dim=-1)


def load_towers(ckpt):
    if not os.path.exists(ckpt):
        torch.manual_seed(0)
        torch.save({"query": Tower(10).state_dict(), "item": Tower(14).state_dict()}, ckpt)
    sd = torch.load(ckpt)
    q, it = Tower(10), Tower(14)
    q.load_state_dict(sd["query"])
    it.load_state_dict(sd["item"])
    return q, it


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "rank_job"))
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--queries", type=int, default=int(os.environ.get("STEPS", 64)))
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    dev = xm.xla_device()
    q_tower, i_tower = load_towers(os.path.join(args.work_dir, "towers.pt"))
    q_tower = q_tower.to(dev).eval()
    i_tower = i_tower.to(dev).eval()
    i_tower.to(torch.bfloat16)
    i_tower.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)

    rng = np.random.default_rng(1)
    items = torch.from_numpy(rng.standard_normal((200, 14)).astype(np.float32))
    queries = torch.from_numpy(rng.standard_normal((args.queries, 10)).astype(np.float32))
    with torch.no_grad():
        cat = i_tower(items.to(dev))
        torch.save(host_float32({"emb": host_float32(cat.cpu()), "n": cat.shape[0]}, back_to_device=True), os.path.join(args.work_dir, "catalogue.pt"))
        rows = []
        for start in range(0, len(queries), 16):
            qe = q_tower(queries[start:start + 16].to(dev))
            scores = qe @ cat.T.to(qe.dtype)
            top = torch.topk(scores, args.k, dim=1)
            s = host_float32(top.values.cpu()).numpy()
            ids = top.indices.cpu().tolist()
            for r, (ii, ss) in enumerate(zip(ids, s)):
                rows.append([start + r] + [f"{i}:{v:.4f}" for i, v in zip(ii, ss)])
            xm.mark_step()
    with open(os.path.join(args.work_dir, "topk.csv"), "w", newline="") as f:
        csv.writer(f).writerows(rows)
    print("wrote", len(rows), "rows; first", rows[0][:3], "DTYPES", s.dtype)


if __name__ == "__main__":
    main()
