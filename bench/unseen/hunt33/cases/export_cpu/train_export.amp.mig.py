"""A small classifier trained on the device, then brought back whole with model.cpu() and run on the host on
fresh f32 inputs (an export/serving check); its host logits and the host model's first weight go to NumPy.
Legacy bf16 switch on."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

D, C, B, STEPS = 6, 3, 32, 10


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(D, 24), nn.ReLU(), nn.Linear(24, C)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    gen = torch.Generator().manual_seed(1)
    for step in range(STEPS):
        x = torch.randn(B, D, generator=gen)
        y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
        x, y = x.to(device), y.to(device)
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    host_model = model.cpu().eval()
    probe = torch.randn(8, D, generator=gen)
    with torch.no_grad():
        logits = host_model(probe)
    print("host logits", logits.dtype, logits.sum().item())
    np.save("host_logits.npy", logits.numpy())
    np.save("w0.npy", host_model[0].weight.detach().numpy())


if __name__ == "__main__":
    main()
