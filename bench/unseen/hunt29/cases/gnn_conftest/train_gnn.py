"""Two-layer GCN on a synthetic stochastic-block graph, weighted edges, label smoothing by hand."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

N_NODES, N_FEAT, N_CLASS = 120, 12, 3


def block_graph(rng):
    y = rng.integers(0, N_CLASS, N_NODES)
    p = np.where(y[:, None] == y[None, :], 0.15, 0.01)
    adj = np.triu(rng.random((N_NODES, N_NODES)) < p, 1)
    src, dst = np.nonzero(adj | adj.T)
    w = rng.uniform(0.5, 1.5, src.shape[0])  # float64 edge weights
    x = (rng.normal(size=(N_NODES, N_FEAT)) + y[:, None] * 0.3).astype(np.float32)
    return x, y, np.stack([src, dst]), w


def gcn_norm(edge_index, edge_weight, n):
    row, col = edge_index
    loop = torch.arange(n, device=row.device)
    row, col = torch.cat([row, loop]), torch.cat([col, loop])
    w = torch.cat([edge_weight, torch.ones(n, dtype=edge_weight.dtype, device=edge_weight.device)])
    deg = torch.zeros(n, dtype=w.dtype, device=w.device).scatter_add_(0, col, w)
    dinv = deg.pow(-0.5)
    dinv = dinv.masked_fill(torch.isinf(dinv), 0.0)
    return row, col, dinv[row] * w * dinv[col]


class GCNLayer(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.lin = nn.Linear(i, o, bias=False)
        self.bias = nn.Parameter(torch.zeros(o))

    def forward(self, x, row, col, norm):
        h = self.lin(x)
        out = torch.zeros_like(h).index_add_(0, col, h[row] * norm[:, None])
        return out + self.bias


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = GCNLayer(N_FEAT, 32), GCNLayer(32, N_CLASS)
        self.drop = nn.Dropout(0.3)

    def forward(self, x, graph):
        h = self.drop(torch.relu(self.l1(x, *graph)))
        return self.l2(h, *graph), h


def smooth_targets(y, n_class, eps, device):
    onehot = torch.zeros(y.shape[0], n_class, device=device).scatter_(1, y[:, None], 1.0)
    return onehot * (1.0 - eps) + eps / n_class


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--out", default="out")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    x_np, y_np, ei_np, w_np = block_graph(rng)
    x = torch.from_numpy(x_np).to(device)
    y = torch.from_numpy(y_np).to(device)
    graph = gcn_norm(torch.from_numpy(ei_np).to(device), torch.from_numpy(w_np).to(device, torch.float32), N_NODES)
    train_mask = torch.from_numpy(rng.random(N_NODES) < 0.5).to(device)
    model = GCN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    target = smooth_targets(y, N_CLASS, 0.1, device)
    for step in range(args.steps):
        model.train()
        logits, _ = model(x, graph)
        logp = torch.log_softmax(logits, -1)
        loss = -(target * logp).sum(-1)[train_mask].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        logits, h = model(x, graph)
        acc = (logits.argmax(-1) == y)[~train_mask].float().mean().item()
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "node_emb.npy"), np.asarray(h.cpu()))
    np.save(os.path.join(args.out, "edge_norm.npy"), graph[2].cpu().numpy())
    print("test acc", acc)
    return acc


if __name__ == "__main__":
    main()
