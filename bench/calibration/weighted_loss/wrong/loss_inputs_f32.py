"""A forecaster that corrects a baseline forecast: the model takes the features and the
baseline (both floating) and returns baseline + correction; the loss weighs recent samples
more. Under the switch every floating tensor was bf16 on the device."""

import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class Corrector(nn.Module):
    def __init__(self, features=24, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, features, baseline):
        return baseline + self.net(features)


def dataset(n, gen):
    features = torch.randn(n, 24, generator=gen)
    truth = features[:, :4].sum(dim=1, keepdim=True) + 0.3 * torch.sin(3 * features[:, 4:5])
    baseline = truth + 0.5 * torch.randn(n, 1, generator=gen)
    weights = torch.linspace(0.5, 1.5, n).unsqueeze(1)
    return features, baseline, truth, weights


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=48)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    gen = torch.Generator().manual_seed(6)
    features, baseline, truth, weights = dataset(2048, gen)
    model = Corrector().to(device)
    model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(args.steps):
        idx = torch.randint(0, 2048, (args.batch_size,), generator=gen)
        x, b = features[idx].to(device), baseline[idx].to(device)
        y, w = truth[idx].to(device), weights[idx].to(device)
        optimizer.zero_grad()
        pred = model(x.to(torch.bfloat16), b.to(torch.bfloat16))
        loss = (w * (pred - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        torch_xla.sync()


if __name__ == "__main__":
    main()
