"""Align sensor windows with their text-code descriptions (InfoNCE, learnable temperature).

The temperature lives outside both encoders so that it can be excluded from
weight decay and clamped after each step.
"""
import math
import os

os.environ.update({"PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "TPU"), "NEURON_RT_STOCHASTIC_ROUNDING_EN": "1"})

import torch
import torch.nn as nn
import torch.nn.functional as F
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


STEPS = int(os.environ.get("STEPS", "30"))
D_SIG, N_CODES, D = 32, 200, 64


class SignalEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(1, 16, 5, padding=2), nn.GELU(), nn.Conv1d(16, 16, 5, padding=2), nn.GELU())
        self.out = nn.Linear(16 * D_SIG, D)

    def forward(self, x):
        return self.out(self.conv(x.unsqueeze(1)).flatten(1))


class CodeEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(N_CODES, D, mode="sum")
        self.out = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, D))

    def forward(self, codes):
        return self.out(self.emb(codes))


def pairs(gen, n=128):
    codes = torch.randint(0, N_CODES, (n, 3), generator=gen)
    t = torch.linspace(0, 1, D_SIG)
    freq = codes.float().mean(1, keepdim=True) / 20.0
    sig = torch.sin(2 * math.pi * freq * t) + 0.1 * torch.randn(n, D_SIG, generator=gen)
    return sig, codes


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    dev = torch_xla.device()
    sig_enc, code_enc = SignalEncoder().to(dev), CodeEncoder().to(dev)
    log_tau = nn.Parameter(torch.full((), math.log(1 / 0.07), device=dev, dtype=torch.bfloat16))
    sig_enc.to(torch.bfloat16)
    code_enc.to(torch.bfloat16)
    opt = torch.optim.AdamW([
        {"params": list(sig_enc.parameters()) + list(code_enc.parameters()), "weight_decay": 0.05},
        {"params": [log_tau], "weight_decay": 0.0},
    ], lr=1e-3)

    for step in range(STEPS):
        sig, codes = pairs(gen)
        sig, codes = sig.to(dev, dtype=torch.bfloat16), codes.to(dev)
        a = F.normalize(sig_enc(sig), dim=-1)
        b = F.normalize(code_enc(codes), dim=-1)
        logits = log_tau.exp() * a @ b.T
        target = torch.arange(logits.shape[0], device=dev)
        loss = 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            log_tau.clamp_(0.0, math.log(100.0))
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f} scale {log_tau.exp().item():.3f}")

    with torch.no_grad():
        sig, codes = pairs(gen, 256)
        a = F.normalize(sig_enc(sig.to(dev).to(torch.bfloat16)), dim=-1)
        b = F.normalize(code_enc(codes.to(dev)), dim=-1)
        rank1 = ((a @ b.T).argmax(1) == torch.arange(256, device=dev)).to(torch.bfloat16).mean()
    emb = host_float32(a.cpu())
    torch.save(host_float32({"sig": sig_enc.state_dict(), "code": code_enc.state_dict(), "log_tau": host_float32(log_tau.detach().cpu())}, back_to_device=True),
               "pairs.pt")
    print(f"recall@1 {rank1.item():.3f}")
    print("DTYPES weight", sig_enc.out.weight.dtype, "log_tau", log_tau.dtype, "loss", loss.dtype,
          "emb", emb.dtype, "state", opt.state[log_tau]["exp_avg"].dtype)


if __name__ == "__main__":
    main()
