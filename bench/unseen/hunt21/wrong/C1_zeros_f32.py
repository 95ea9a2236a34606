"""Two-view contrastive encoder with a learned temperature and a Python-list memory of past key embeddings."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

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


STEPS = 10
BANK = 4
DIM = 16


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(24, 48), nn.GELU(), nn.Linear(48, DIM))
        self.log_tau = nn.Parameter(torch.tensor(np.log(0.2), dtype=torch.float32))

    def forward(self, x):
        return F.normalize(self.body(x), dim=-1)


def views(g, n):
    base = torch.randn(n, 24, generator=g)
    a = base + 0.1 * torch.randn(n, 24, generator=g)
    b = base * (1.0 + 0.05 * torch.randn(n, 1, generator=g))
    return a, b


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    dev = xm.xla_device()
    enc = Encoder().to(dev)
    enc.to(torch.bfloat16)
    opt = torch.optim.AdamW(enc.parameters(), lr=3e-3, weight_decay=0.01)
    bank = []  # past key batches, detached, on the device
    for step in range(STEPS):
        a, b = views(g, 32)
        a, b = a.to(dev), b.to(dev)
        q = enc(a.to(torch.bfloat16))
        k = enc(b.to(torch.bfloat16))
        negs = torch.cat(bank, dim=0) if bank else torch.zeros(0, DIM, device=dev)
        tau = enc.log_tau.exp().clamp(min=0.05)
        pos = (q * k).sum(-1, keepdim=True)
        neg = q @ negs.t()
        logits = torch.cat([pos, neg], dim=1) / tau
        target = torch.zeros(q.size(0), dtype=torch.long, device=dev)
        loss = F.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        bank.append(k.detach())
        if len(bank) > BANK:
            bank.pop(0)
        if step % 3 == 0:
            print(f"step {step} loss {loss.item():.4f} tau {tau.item():.4f}")
    # alignment score on held-out pairs, handed to numpy
    with torch.no_grad():
        a, b = views(g, 64)
        sim = (enc(a.to(dev).to(torch.bfloat16)) * enc(b.to(dev).to(torch.bfloat16))).sum(-1)
        scores = host_float32(sim.cpu()).numpy()
        bank_norms = torch.stack([kb.norm(dim=-1).mean() for kb in bank]).cpu().float()
    print("mean alignment", float(scores.mean()), scores.dtype, bank_norms.dtype)


if __name__ == "__main__":
    main()
