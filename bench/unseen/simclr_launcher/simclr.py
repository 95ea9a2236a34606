"""SimCLR-style contrastive pretraining of a small MLP encoder (NT-Xent loss, two noisy views)."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Encoder(nn.Module):
    def __init__(self, in_dim=48, hidden=128, rep=64, proj=32):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, rep)
        )
        self.projector = nn.Sequential(nn.Linear(rep, rep), nn.ReLU(), nn.Linear(rep, proj))

    def forward(self, x):
        return self.projector(self.backbone(x))


class NTXent(nn.Module):
    def __init__(self, temperature: float = 0.2):
        super().__init__()
        self.temperature = temperature

    def forward(self, z1, z2):
        z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
        n = z.shape[0]
        sim = z @ z.t() / self.temperature
        self_mask = torch.eye(n, device=z.device)
        sim = sim - self_mask * 1e4  # a sample is never its own positive
        targets = torch.arange(n, device=z.device).roll(n // 2)
        return F.cross_entropy(sim, targets)


def two_views(x, gen):
    def augment(v):
        keep = (torch.rand(v.shape, generator=gen) > 0.2).float()
        return v * keep + 0.1 * torch.randn(v.shape, generator=gen)

    return augment(x), augment(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--temperature", type=float, default=0.2)
    args = parser.parse_args()

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)
    prototypes = torch.randn(8, 48, generator=gen)
    pool = prototypes[torch.randint(0, 8, (args.batch * 6,), generator=gen)]
    pool = pool + 0.3 * torch.randn(pool.shape, generator=gen)

    device = torch_xla.device()
    encoder = Encoder().to(device)
    criterion = NTXent(args.temperature)
    optimizer = torch.optim.SGD(encoder.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4, nesterov=True)

    for step in range(args.steps):
        batch = pool[(step % 6) * args.batch : (step % 6 + 1) * args.batch]
        v1, v2 = two_views(batch, gen)
        v1, v2 = v1.to(device), v2.to(device)
        optimizer.zero_grad()
        loss = criterion(encoder(v1), encoder(v2))
        loss.backward()
        xm.optimizer_step(optimizer, barrier=True)
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
