"""A GRU regressor whose legacy run crashes under XLA_USE_BF16 on torch-xla 2.9.

Measured 2026-11-22 (torch 2.9.0 / torch-xla 2.9.0, PJRT_DEVICE=CPU): torch-xla runs nn.GRU
through torch_xla.experimental.scan, whose traced step sees f32 carries and bf16 arguments under
the switch: "RuntimeError: Call parameter must match argument; got parameter 0 shape:
f32[32,16], argument shape: bf16[32,16]". The explicitly cast model (stochastic mode) and the
FP32 run train. verify then compares the migrated run with the FP32 reference and says so.
"""

import os

os.environ["XLA_USE_BF16"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla


class GRURegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 16, batch_first=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = GRURegressor().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    features = torch.randn(512, 12, 8, generator=gen)
    targets = features.mean(dim=(1, 2)).unsqueeze(1)
    for _ in range(args.steps):
        idx = torch.randint(0, 512, (32,), generator=gen)
        x = features[idx].to(device)
        y = targets[idx].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
