"""A model with its optimizer, and a learned temperature held in a plain leaf tensor with a second optimizer of
the same class (SAC's log_alpha), nothing else: gpu-compatible wraps the first, not the second."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    log_alpha = torch.zeros(1, device=device, requires_grad=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    a_opt = torch.optim.Adam([log_alpha], lr=3e-3)
    for step in range(12):
        x = torch.randn(16, 4).to(device)
        y = x.sum(1, keepdim=True)
        loss = ((model(x) - y) ** 2).mean() + (log_alpha.exp() - 0.5).pow(2).sum()
        opt.zero_grad()
        a_opt.zero_grad()
        loss.backward()
        opt.step()
        a_opt.step()
        xm.mark_step()
        print(step, loss.item())


main()
