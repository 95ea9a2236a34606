"""Node classification with a two-layer message-passing network on a random geometric graph; messages
are summed into an fp32 accumulator with scatter_add_ and mean-normalised by in-degree."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--bf16", action="store_true", default=True)
    ap.add_argument("--nodes", type=int, default=96)
    return ap.parse_args()


args = parse()
if args.bf16:
    os.environ["XLA_USE_BF16"] = "1"

import torch_xla  # noqa: E402


class MPLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.msg = nn.Linear(2 * d_in, d_out)
        self.upd = nn.Linear(d_in + d_out, d_out)

    def forward(self, x, edge_index):
        src, dst = edge_index
        m = F.silu(self.msg(torch.cat([x[src], x[dst]], dim=-1)))
        agg = torch.zeros(x.shape[0], m.shape[1], device=x.device, dtype=torch.float32)
        agg.scatter_add_(0, dst.unsqueeze(-1).expand_as(m), m)
        deg = torch.bincount(dst, minlength=x.shape[0]).clamp(min=1).unsqueeze(-1)
        agg = (agg / deg).to(x.dtype)
        return F.silu(self.upd(torch.cat([x, agg], dim=-1)))


class GNN(nn.Module):
    def __init__(self, d_in=6, hidden=32, n_classes=3):
        super().__init__()
        self.l1 = MPLayer(d_in, hidden)
        self.l2 = MPLayer(hidden, hidden)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x, edge_index):
        return self.head(self.l2(self.l1(x, edge_index), edge_index))


def random_graph(gen, n):
    pos = torch.rand(n, 2, generator=gen)
    d = torch.cdist(pos, pos)
    src, dst = ((d < 0.18) & (d > 0)).nonzero(as_tuple=True)
    y = (pos[:, 0] * 3).long().clamp(max=2)
    x = torch.cat([pos, torch.randn(n, 4, generator=gen) * 0.1 + y[:, None] * 0.2], dim=-1)
    return x, torch.stack([src, dst]), y


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(4)
    device = torch_xla.device()
    x, ei, y = random_graph(gen, args.nodes)
    x, ei, y = x.to(device), ei.to(device), y.to(device)
    model = GNN().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    for step in range(args.steps):
        logits = model(x, ei)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("DTYPES", "weight", model.head.weight.dtype, "logits", logits.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
