"""A tiny sequence regressor whose positional encoding comes from a helper that returns a
sinusoid table (built with torch.tensor from a list, so float32), added to the embeddings."""

import argparse
import math
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


def sinusoid_table(length, dim, device):
    rows = []
    for pos in range(length):
        rows.append([math.sin(pos / 10000 ** (i / dim)) if i % 2 == 0 else math.cos(pos / 10000 ** ((i - 1) / dim))
                     for i in range(dim)])
    return torch.tensor(rows, device=device)


class SeqRegressor(nn.Module):
    def __init__(self, vocab=50, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + sinusoid_table(tokens.shape[1], h.shape[-1], tokens.device)
        h = torch.relu(self.mix(h))
        return self.head(h.mean(dim=1)).squeeze(-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = SeqRegressor().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(4)
    for _ in range(args.steps):
        tokens = torch.randint(0, 50, (16, 12), generator=gen)
        target = (tokens.float().mean(dim=1) / 50).to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(tokens.to(device)), target)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
