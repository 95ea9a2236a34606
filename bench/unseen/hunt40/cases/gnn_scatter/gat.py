"""Node classification with a hand-written GAT layer (edge softmax via scatter_reduce) and a GCN layer
(symmetric degree normalisation), on a random graph built with NumPy."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class GCNLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, x, src, dst):
        n = x.shape[0]
        deg = x.new_zeros(n).index_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
        dinv = deg.pow(-0.5)
        dinv = dinv.masked_fill(torch.isinf(dinv), 0.0)
        norm = dinv[src] * dinv[dst]
        h = self.lin(x)
        return torch.zeros_like(h).index_add_(0, dst, h[src] * norm[:, None])


class GATLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.att_src = nn.Parameter(torch.randn(d_out) * 0.1)
        self.att_dst = nn.Parameter(torch.randn(d_out) * 0.1)

    def forward(self, x, src, dst):
        h = self.lin(x)
        e = F.leaky_relu((h * self.att_src).sum(-1)[src] + (h * self.att_dst).sum(-1)[dst], 0.2)
        emax = torch.full((x.shape[0],), float("-inf"), device=x.device, dtype=e.dtype)
        emax = emax.scatter_reduce(0, dst, e, reduce="amax", include_self=True)
        w = torch.exp(e - emax[dst])
        denom = torch.zeros(x.shape[0], device=x.device, dtype=w.dtype).index_add_(0, dst, w)
        alpha = w / denom[dst].clamp(min=1e-9)
        return torch.zeros_like(h).index_add_(0, dst, h[src] * alpha[:, None])


class Net(nn.Module):
    def __init__(self, d_in, d_h, n_cls):
        super().__init__()
        self.gat = GATLayer(d_in, d_h)
        self.gcn = GCNLayer(d_h, n_cls)

    def forward(self, x, src, dst):
        return self.gcn(F.elu(self.gat(x, src, dst)), src, dst)


def random_graph(n=120, p=0.05, d=8, n_cls=3, seed=0):
    rng = np.random.default_rng(seed)
    adj = rng.random((n, n)) < p
    adj = adj | adj.T | np.eye(n, dtype=bool)
    src, dst = np.nonzero(adj)
    labels = rng.integers(0, n_cls, size=n)
    feats = rng.normal(size=(n, d)) + labels[:, None] * 0.5
    return feats, src, dst, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()
    feats, src, dst, labels = random_graph()
    x = torch.from_numpy(feats).float().to(dev)
    src_t = torch.from_numpy(src).to(dev)
    dst_t = torch.from_numpy(dst).to(dev)
    y = torch.from_numpy(labels).to(dev)
    train_mask = torch.from_numpy(np.arange(len(labels)) % 5 != 0).to(dev)
    model = Net(x.shape[1], 16, 3).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for step in range(args.steps):
        out = model(x, src_t, dst_t)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    with torch.no_grad():
        probs = model(x, src_t, dst_t).softmax(-1).cpu().numpy()
    print("DTYPES", model.gat.att_src.dtype, probs.dtype, "val acc", float((probs.argmax(1) == labels)[~(np.arange(len(labels)) % 5 != 0)].mean()))


if __name__ == "__main__":
    main()
