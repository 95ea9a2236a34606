"""Top-2 mixture-of-experts regressor: routing by torch.topk, tokens combined with index_add_."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Experts(nn.Module):
    def __init__(self, n_experts, dim, hidden):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(n_experts, dim, hidden) * dim ** -0.5)
        self.w2 = nn.Parameter(torch.randn(n_experts, hidden, dim) * hidden ** -0.5)

    def forward(self, x, e):  # x: (n, dim) tokens routed to expert e
        return F.silu(x @ self.w1[e]) @ self.w2[e]


class MoELayer(nn.Module):
    def __init__(self, dim=32, hidden=64, n_experts=4, k=2):
        super().__init__()
        self.k = k
        self.n_experts = n_experts
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.experts = Experts(n_experts, dim, hidden)

    def forward(self, x):
        n, d = x.shape
        logits = self.router(x)
        probs = logits.softmax(dim=-1)
        gate, idx = torch.topk(probs, self.k, dim=-1)  # (n, k)
        gate = gate / gate.sum(dim=-1, keepdim=True)
        out = torch.zeros(n, d, device=x.device)
        for e in range(self.n_experts):
            mask = (idx == e)  # (n, k)
            w = (gate * mask).sum(dim=-1, keepdim=True)  # (n, 1), zero where not routed
            out.index_add_(0, torch.arange(n, device=x.device), w * self.experts(x, e))
        # load-balancing loss (Switch-style)
        frac = F.one_hot(idx[:, 0], self.n_experts).float().mean(0)
        aux = self.n_experts * (frac * probs.mean(0)).sum()
        return out, aux


class Net(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.inp = nn.Linear(8, dim)
        self.moe = MoELayer(dim)
        self.norm = nn.LayerNorm(dim, eps=LN_EPS)
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        h = F.gelu(self.inp(x))
        m, aux = self.moe(h)
        return self.out(self.norm(h + m)).squeeze(-1), aux


LN_EPS = 1e-5


def target_fn(x):
    return torch.where(x[:, 0] > 0, x[:, 1:4].sum(-1), torch.sin(3 * x[:, 4]))


def main(args):
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Net().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, eps=ADAM_EPS)
    counts = torch.zeros(4, device=device)
    for step in range(args.steps):
        x = torch.randn(args.bs, 8)
        y = target_fn(x)
        x, y = x.to(device), y.to(device)
        pred, aux = model(x)
        loss = F.smooth_l1_loss(pred, y) + 0.01 * aux
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        with torch.no_grad():
            _, top1 = model.moe.router(F.gelu(model.inp(x))).max(-1)
            counts += F.one_hot(top1, 4).sum(0)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} aux {aux.item():.3f}")
    load = (counts / counts.sum()).cpu()
    print("expert load", [round(v, 3) for v in load.tolist()])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--bs", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    args = p.parse_args()
    os.environ.setdefault("XLA_USE_BF16", "1")
    # Adam's default eps underflows in bf16 updates; widen it when the switch is on
    ADAM_EPS = 1e-6 if os.environ.get("XLA_USE_BF16") == "1" else 1e-8
    main(args)
