"""A spectral loss through torch.fft.rfft on the model's output (torch-xla runs the FFT through its CPU fallback)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def spec_mag(x):
    spec = torch.fft.rfft(x, dim=-1)
    return torch.view_as_real(spec).pow(2).sum(-1).add(1e-9).sqrt()


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Linear(32, 32).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(3):
        x = torch.randn(4, 32).to(device)
        pred = model(x)
        loss = (spec_mag(pred) - spec_mag(x)).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(step, loss.item(), "pred", pred.dtype, "loss", loss.dtype)


main()
