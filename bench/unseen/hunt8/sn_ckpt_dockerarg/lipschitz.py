"""Lipschitz-constrained residual regressor: spectral-normalised layers, activation
checkpointing of each block, a learned output gain clipped in place after every step."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm
from torch_xla.utils.checkpoint import checkpoint
import torch_xla.core.xla_model as xm


def gated_mix(h, gate_logits):
    """Residual gate: a fixed per-channel prior mixed with a learned gate."""
    prior = torch.full((h.shape[-1],), 0.5, device=h.device)
    gate = torch.sigmoid(gate_logits) * prior + (1 - prior) * 0.1
    return h * gate


class SNBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = spectral_norm(nn.Linear(dim, dim))
        self.fc2 = spectral_norm(nn.Linear(dim, dim))
        self.gate = nn.Linear(dim, dim)

    def inner(self, x):
        h = self.fc2(F.silu(self.fc1(x)))
        return gated_mix(h, self.gate(x))

    def forward(self, x):
        if self.training:
            return x + checkpoint(self.inner, x)
        return x + self.inner(x)


class LipschitzNet(nn.Module):
    def __init__(self, d_in=8, dim=32, depth=3):
        super().__init__()
        self.inp = spectral_norm(nn.Linear(d_in, dim))
        self.blocks = nn.ModuleList(SNBlock(dim) for _ in range(depth))
        self.out = nn.Linear(dim, 1)
        self.gain = nn.Parameter(torch.tensor(1.0))

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h)
        return self.gain * self.out(h).squeeze(-1)


def target_fn(x):
    return torch.sin(x[:, 0] * 2) + 0.5 * x[:, 1] * x[:, 2] - x[:, 3].abs()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--max-gain", type=float, default=2.0)
    args = ap.parse_args()

    device = xm.xla_device()
    torch.manual_seed(0)
    model = LipschitzNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=4e-3)
    base_lr = opt.param_groups[0]["lr"]
    gen = torch.Generator().manual_seed(7)

    model.train()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = base_lr * min(1.0, (step + 1) / args.warmup)
        x = torch.randn(64, 8, generator=gen)
        y = target_fn(x)
        x, y = x.to(device), y.to(device)
        loss = F.smooth_l1_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        with torch.no_grad():
            model.gain.clamp_(-args.max_gain, args.max_gain)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} gain {model.gain.item():.3f}", flush=True)

    model.eval()
    with torch.no_grad():
        x = torch.randn(16, 8, generator=gen).to(device)
        err = (model(x) - target_fn(x)).abs().mean()
    print(f"eval mae {err.item():.4f}")


if __name__ == "__main__":
    main()
