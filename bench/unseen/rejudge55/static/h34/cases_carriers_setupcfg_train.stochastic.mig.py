"""Small MLP classifier on two interleaved spirals; the precision switch comes from the
launcher (no environment handling here)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def spirals(n, gen):
    t = torch.rand(n, generator=gen) * 3 * math.pi
    label = torch.randint(0, 2, (n,), generator=gen)
    sign = label.float() * 2 - 1
    pts = torch.stack([t * torch.cos(t) * sign, t * torch.sin(t) * sign], dim=1) / 10
    return pts + 0.02 * torch.randn(n, 2, generator=gen), label


def main(steps=10):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(2, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 2))
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    losses = []
    for step in range(steps):
        x, y = spirals(128, gen)
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        losses.append(loss.item())
        print(f"step {step} loss {losses[-1]:.4f}")
    print("DTYPES weight", model[0].weight.dtype, "loss", loss.dtype)
    return losses


if __name__ == "__main__":
    main()
