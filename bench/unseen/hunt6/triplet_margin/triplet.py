"""Metric learning with batch-hard triplet loss; a margin that grows over training."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm
import torch_xla
import torch_xla.core.xla_model as xm


class Embedder(nn.Module):
    def __init__(self, d_in=24, d_emb=16):
        super().__init__()
        self.net = nn.Sequential(
            weight_norm(nn.Linear(d_in, 64)), nn.ReLU(),
            weight_norm(nn.Linear(64, 64)), nn.ReLU(),
            nn.Linear(64, d_emb),
        )

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def pairwise_dist(e):
    sq = (e * e).sum(-1)
    d2 = sq[:, None] - 2 * e @ e.T + sq[None, :]
    return d2.clamp_min(1e-6).sqrt()


def batch_hard(e, labels):
    dist = pairwise_dist(e)
    same = labels[:, None] == labels[None, :]
    hardest_pos = torch.where(same, dist, torch.zeros_like(dist)).amax(1)
    hardest_neg = torch.where(same, torch.full_like(dist, 4.0), dist).amin(1)
    return hardest_pos, hardest_neg


def sample_batch(protos, per_class, gen):
    n_cls = protos.size(0)
    labels = torch.arange(n_cls).repeat_interleave(per_class)
    x = protos[labels] + 0.8 * torch.randn(len(labels), protos.size(1), generator=gen)
    return x, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--margin", type=float, default=0.2)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    protos = torch.randn(8, 24, generator=gen)
    device = xm.xla_device()
    model = Embedder().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    for step in range(args.steps):
        x, labels = sample_batch(protos, 6, gen)
        x, labels = x.to(device), labels.to(device)
        emb = model(x)
        d_ap, d_an = batch_hard(emb, labels)
        # margin warm-up: from half the target margin to the full one
        margin_now = args.margin * min(1.0, 0.5 + step / args.steps)
        margin = torch.full((x.size(0),), margin_now, device=device)
        loss = F.relu(d_ap - d_an + margin).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        active = (d_ap - d_an + margin > 0).float().mean()
        print(f"step {step} loss {loss.item():.4f} active {active.item():.2f}")


if __name__ == "__main__":
    main()
