"""torch.tensor of a module-level tuple of floats, made on the device in main and used in the loss."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

TAUS = (0.1, 0.5, 0.9)


def pinball(pred, target, taus):
    err = target.unsqueeze(1) - pred
    return torch.maximum(taus.view(1, -1) * err, (taus.view(1, -1) - 1) * err).mean()


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    taus = torch.tensor(TAUS, device=device)
    for step in range(3):
        x = torch.randn(8, 4).to(device)
        y = x.sum(1).to(device)
        loss = pinball(model(x), y, taus)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(step, loss.item(), "taus", taus.dtype, "loss", loss.dtype)


main()
