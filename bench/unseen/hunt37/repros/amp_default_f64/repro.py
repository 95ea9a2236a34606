# A PINN written for float64 (set_default_dtype), run under XLA_USE_BF16 (f64 -> bf16 on the device).
import math
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

torch.set_default_dtype(torch.float64)


def main():
    torch.manual_seed(0)
    dev = torch_xla.device()
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(12):
        x = torch.rand(64, 1, device=dev).requires_grad_()
        u = model(x)
        du = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)[0]
        loss = ((du - torch.cos(math.pi * x)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(loss.item())
    print("dtype weight", model[0].weight.dtype, "x", x.dtype, "du", du.dtype, "loss", loss.dtype)


main()
