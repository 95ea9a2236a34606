"""Physics-informed network for -u''(x) = pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0.

Residuals use autograd.grad with create_graph=True; the exact solution is
sin(pi x). Error statistics are accumulated in double precision."""
import math
import os

os.putenv("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")

import torch
import torch.nn as nn
import torch_xla

STEPS = int(os.environ.get("STEPS", "30"))
PI = torch.tensor(math.pi, dtype=torch.float32)


class PINN(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                                 nn.Linear(width, 1))

    def forward(self, x):
        return self.net(x)


def residual(model, x):
    x = x.requires_grad_()
    u = model(x.to(torch.bfloat16))
    du = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)[0]
    d2u = torch.autograd.grad(du, x, torch.ones_like(du), create_graph=True)[0]
    source = (PI.to(x.device, dtype=torch.bfloat16) ** 2).to(torch.bfloat16) * torch.sin(math.pi * x)
    return -d2u - source


def main():
    torch.manual_seed(0)
    dev = torch_xla.device()
    model = PINN().to(dev)
    model.to(torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    boundary = torch.tensor([[0.0], [1.0]], device=dev, dtype=torch.bfloat16)
    for step in range(STEPS):
        x = torch.rand(128, 1, device=dev)
        r = residual(model, x)
        loss_pde = (r ** 2).mean()
        loss_bc = (model(boundary.to(torch.bfloat16)) ** 2).mean()
        loss = loss_pde + 10.0 * loss_bc
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f} pde {loss_pde.item():.4f} bc {loss_bc.item():.5f}")

    xs = torch.linspace(0.0, 1.0, 101, device=dev).to(torch.bfloat16).unsqueeze(-1)
    with torch.no_grad():
        u = model(xs.to(torch.bfloat16))
        exact = torch.sin(math.pi * xs)
        err = (u - exact).float()
        l2 = torch.sqrt((err ** 2).mean())
        linf = err.abs().max()
    r_eval = residual(model, xs.clone())
    grad_u = torch.autograd.grad(model(xs.clone().requires_grad_().to(torch.bfloat16)).sum(), model.net[0].weight)[0]
    table = torch.cat([xs, u, exact], 1).cpu().float()
    print(f"L2 {l2.item():.5f} Linf {linf.item():.5f} residual {r_eval.abs().mean().item():.4f}")
    print("first rows", table[:3].tolist())
    print("DTYPES weight", model.net[0].weight.dtype, "loss", loss.dtype, "residual", r_eval.dtype,
          "err", err.dtype, "table", table.dtype, "grad", grad_u.dtype)


if __name__ == "__main__":
    main()
