"""Physics-informed net for u'' = -pi^2 sin(pi x) on [0, 1], u(0)=u(1)=0, in float64 (torch's default dtype)."""
import math
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.set_default_dtype(torch.float32)  # was float64, stored as f32 by XLA_DOWNCAST_BF16
STEPS = int(os.environ.get("STEPS", "10"))


class MLP(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(1, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))

    def forward(self, x):
        return self.f(x)


def residual(model, x):
    x = x.requires_grad_(True)
    u = model(x)
    du = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)[0]
    d2u = torch.autograd.grad(du, x, torch.ones_like(du), create_graph=True)[0]
    return d2u + math.pi ** 2 * torch.sin(math.pi * x)


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = MLP().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    xb = torch.tensor([[0.0], [1.0]], device=dev)
    for step in range(STEPS):
        xc = torch.rand(64, 1, device=dev)
        opt.zero_grad()
        loss = residual(model, xc).pow(2).mean() + 10.0 * model(xb).pow(2).mean()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.6f}")
    xs = torch.linspace(0, 1, 11, device=dev).unsqueeze(1)
    err = (model(xs) - torch.sin(math.pi * xs)).abs().max()
    print("DTYPES", next(model.parameters()).dtype, xc.dtype, err.dtype)
    print("max err", err.cpu().item(), model(xs).detach().cpu().dtype)


if __name__ == "__main__":
    main()
