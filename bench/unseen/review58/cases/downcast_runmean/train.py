"""Autoencoder trained under XLA_DOWNCAST_BF16; a running mean of the reconstruction error kept in double, then
brought back with .float() for the threshold saved at the end."""
import os

os.environ.setdefault("XLA_DOWNCAST_BF16", "1")

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 6))
OUT = os.environ.get("OUT_DIR", "/tmp/downcast_runmean")


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(20, 6)
        self.dec = nn.Linear(6, 20)

    def forward(self, x):
        return self.dec(torch.relu(self.enc(x)))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = AE().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    run_mean = torch.zeros(20, dtype=torch.float64, device=dev)
    count = 0
    basis = torch.randn(6, 20)
    for step in range(STEPS):
        x = (torch.randn(32, 6) @ basis).to(dev)
        recon = model(x)
        err = (recon - x).pow(2)
        loss = err.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        count += 1
        run_mean += (err.detach().mean(0).double() - run_mean) / count
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    threshold = run_mean.float() * 3.0
    score = ((model(x) - x).pow(2) > threshold).float().mean()
    torch.save({"threshold": threshold.cpu(), "model": model.state_dict()}, os.path.join(OUT, "ae.pt"))
    print("DTYPES", run_mean.dtype, threshold.dtype, score.item())


if __name__ == "__main__":
    main()
