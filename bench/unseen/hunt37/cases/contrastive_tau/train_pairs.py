"""Align sensor windows with their text-code descriptions (InfoNCE, learnable temperature).

The temperature lives outside both encoders so that it can be excluded from
weight decay and clamped after each step.
"""
import math
import os

os.environ.update({"PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "TPU"), "XLA_USE_BF16": "1"})

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

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
    log_tau = nn.Parameter(torch.full((), math.log(1 / 0.07), device=dev))
    opt = torch.optim.AdamW([
        {"params": list(sig_enc.parameters()) + list(code_enc.parameters()), "weight_decay": 0.05},
        {"params": [log_tau], "weight_decay": 0.0},
    ], lr=1e-3)

    for step in range(STEPS):
        sig, codes = pairs(gen)
        sig, codes = sig.to(dev), codes.to(dev)
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
        a = F.normalize(sig_enc(sig.to(dev)), dim=-1)
        b = F.normalize(code_enc(codes.to(dev)), dim=-1)
        rank1 = ((a @ b.T).argmax(1) == torch.arange(256, device=dev)).float().mean()
    emb = a.cpu()
    torch.save({"sig": sig_enc.state_dict(), "code": code_enc.state_dict(), "log_tau": log_tau.detach().cpu()},
               "pairs.pt")
    print(f"recall@1 {rank1.item():.3f}")
    print("DTYPES weight", sig_enc.out.weight.dtype, "log_tau", log_tau.dtype, "loss", loss.dtype,
          "emb", emb.dtype, "state", opt.state[log_tau]["exp_avg"].dtype)


if __name__ == "__main__":
    main()
