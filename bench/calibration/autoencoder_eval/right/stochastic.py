"""A denoising autoencoder with a held-out evaluation every 5 steps (no_grad forward passes and
their own syncs between two optimizer steps) and the training loss printed every 4 steps."""

import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class DenoisingAE(nn.Module):
    def __init__(self, dim=32, code=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, code))
        self.decoder = nn.Sequential(nn.Linear(code, 64), nn.ReLU(), nn.Linear(64, dim))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def low_rank_data(n, gen):
    basis = torch.randn(6, 32, generator=gen)
    return torch.randn(n, 6, generator=gen) @ basis / 2


def evaluate(model, held_out, device):
    model.eval()
    total = torch.zeros((), device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        for chunk in held_out.split(128):
            x = chunk.to(device)
            total += nn.functional.mse_loss(model(x.to(torch.bfloat16)), x.to(torch.bfloat16), reduction="sum")
    model.train()
    xm.mark_step()
    return total / held_out.numel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--noise", type=float, default=0.3)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(7)
    train, held_out = low_rank_data(4096, gen), low_rank_data(512, gen)
    model = DenoisingAE().to(device)
    model.to(torch.bfloat16)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(1, args.steps + 1):
        clean = train[torch.randint(0, 4096, (args.batch_size,), generator=gen)]
        noisy = clean + args.noise * torch.randn(clean.shape, generator=gen)
        x, target = noisy.to(device), clean.to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x.to(torch.bfloat16)), target.to(torch.bfloat16))
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if step % 4 == 0:
            print(f"step {step} loss {loss.item():.4f}")
        if step % 5 == 0:
            print(f"step {step} eval {evaluate(model, held_out, device).item():.4f}")


if __name__ == "__main__":
    main()
