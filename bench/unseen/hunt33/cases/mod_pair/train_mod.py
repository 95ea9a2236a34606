"""Sequence regression with the model imported from nets.py (a sibling module whose forward makes a tensor on the
device); the final predictions go to NumPy. Legacy bf16 switch on."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from nets import RampNet

T, D, B, STEPS = 6, 4, 16, 10


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = RampNet(D, 24).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(6)
    for step in range(STEPS):
        x = torch.randn(B, T, D, generator=gen)
        y = x.mean(-1) + torch.linspace(0.0, 1.0, T)
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    np.save("pred.npy", model(x).detach().cpu().numpy())


if __name__ == "__main__":
    main()
