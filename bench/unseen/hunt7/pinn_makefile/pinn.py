"""Physics-informed MLP for the 1-D heat equation u_t = k u_xx on [0,1] x [0,1].

u(x, 0) = sin(pi x), u(0, t) = u(1, t) = 0. Residual at random collocation points drawn on
the device each step; derivatives by torch.autograd.grad with create_graph=True.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class PINN(nn.Module):
    def __init__(self, width=48, depth=3):
        super().__init__()
        layers, d = [], 2
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.Tanh()]
            d = width
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))


def grad(out, inp):
    return torch.autograd.grad(out, inp, grad_outputs=torch.ones_like(out), create_graph=True)[0]


def pde_residual(model, x, t, kappa):
    u = model(x, t)
    u_t = grad(u, t)
    u_x = grad(u, x)
    u_xx = grad(u_x, x)
    return u_t - kappa * u_xx


def boundary_points(n, device):
    t = torch.rand(n, 1, device=device)
    x0 = torch.zeros(n, 1, device=device)
    x1 = torch.ones(n, 1, device=device)
    return torch.cat([x0, x1]), torch.cat([t, t])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--n-col", type=int, default=256)
    ap.add_argument("--kappa", type=float, default=0.1)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = torch_xla.device()
    model = PINN().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    # initial condition on a fixed grid (CPU), moved once
    x_ic = torch.linspace(0, 1, 64).unsqueeze(1)
    u_ic = torch.sin(math.pi * x_ic)
    x_ic, u_ic = x_ic.to(dev), u_ic.to(dev)
    t_ic = torch.zeros_like(x_ic)
    w_bc, w_ic = 10.0, 10.0
    for step in range(1, args.steps + 1):
        x = torch.rand(args.n_col, 1, device=dev).requires_grad_()
        t = torch.rand(args.n_col, 1, device=dev).requires_grad_()
        r = pde_residual(model, x, t, args.kappa)
        xb, tb = boundary_points(32, dev)
        loss_pde = (r ** 2).mean()
        loss_bc = model(xb, tb).pow(2).mean()
        loss_ic = (model(x_ic, t_ic) - u_ic).pow(2).mean()
        loss = loss_pde + w_bc * loss_bc + w_ic * loss_ic
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} pde {loss_pde.item():.5f}")
    # error against the exact solution at t = 0.5
    with torch.no_grad():
        xs = torch.linspace(0, 1, 101).unsqueeze(1).to(dev)
        ts = torch.full_like(xs, 0.5)
        exact = torch.exp(torch.tensor(-args.kappa * math.pi ** 2 * 0.5)) * torch.sin(math.pi * xs.cpu())
        pred = model(xs, ts).cpu()
        print("max abs err at t=0.5:", (pred - exact).abs().max().item())


if __name__ == "__main__":
    main()
