"""Sequence classifier whose feed-forward layer is a top-1 mixture of experts (Switch-style routing,
dense dispatch, load-balancing loss)."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Top1MoE(nn.Module):
    def __init__(self, dim: int, hidden: int, experts: int):
        super().__init__()
        self.num_experts = experts
        self.router = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)) for _ in range(experts)]
        )

    def forward(self, x):
        tokens = x.reshape(-1, x.shape[-1])
        n = tokens.shape[0]
        probs = self.router(tokens).softmax(dim=-1)
        top_p, top_i = probs.max(dim=-1)
        combine = torch.zeros(n, self.num_experts, device=x.device).scatter(1, top_i[:, None], top_p[:, None])
        expert_out = torch.stack([expert(tokens) for expert in self.experts], dim=1)
        y = (combine.unsqueeze(-1) * expert_out).sum(dim=1)
        # Switch Transformer load-balancing term: fraction routed x mean router probability
        counts = torch.zeros(self.num_experts, device=x.device).scatter_add(0, top_i, torch.ones_like(top_p))
        aux = self.num_experts * ((counts / n) * probs.mean(dim=0)).sum()
        return y.reshape(x.shape), aux


class MoEClassifier(nn.Module):
    def __init__(self, in_dim=12, dim=48, hidden=96, experts=4, classes=5):
        super().__init__()
        self.inp = nn.Linear(in_dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.moe = Top1MoE(dim, hidden, experts)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.inp(x)
        moe_out, aux = self.moe(self.norm(h))
        h = h + moe_out
        return self.head(h.mean(dim=1)), aux


def make_data(n: int, seq: int, in_dim: int, classes: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    centers = torch.randn(classes, in_dim, generator=g)
    x = centers[labels][:, None, :] + 0.8 * torch.randn(n, seq, in_dim, generator=g)
    return x, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--experts", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--aux-weight", type=float, default=0.01)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    model = MoEClassifier(experts=args.experts).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    x_all, y_all = make_data(args.batch * 5, 10, 12, 5, seed=11)

    for step in range(args.steps):
        sl = slice((step % 5) * args.batch, (step % 5 + 1) * args.batch)
        x, y = x_all[sl].to(device), y_all[sl].to(device)
        optimizer.zero_grad()
        logits, aux = model(x)
        loss = F.cross_entropy(logits, y) + args.aux_weight * aux
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
