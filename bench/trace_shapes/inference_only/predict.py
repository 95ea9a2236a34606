"""Batch inference with a trained regressor under the legacy switch: no optimizer, no backward;
the model runs on the XLA device in bf16 and the predictions are written as a float32 array."""

import argparse
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--out", default=os.devnull)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Regressor().to(device)
    model.eval()
    gen = torch.Generator().manual_seed(3)
    outputs = []
    with torch.no_grad():
        for _ in range(args.batches):
            features = torch.randn(128, 16, generator=gen).to(device)
            outputs.append(model(features).cpu())
            torch_xla.sync()
    predictions = torch.cat(outputs).numpy().astype(np.float32)
    np.save(args.out if args.out != os.devnull else "/dev/null", predictions)
    print(f"{len(predictions)} predictions, mean {predictions.mean():.4f}")


if __name__ == "__main__":
    main()
