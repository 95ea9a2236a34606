"""Node classification on a random community graph with a hand-written GCN."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def community_graph(n_nodes=96, n_classes=3, n_feat=12, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, size=n_nodes)
    src, dst, w = [], [], []
    for i in range(n_nodes):
        for j in range(i + 1, n_nodes):
            p = 0.15 if labels[i] == labels[j] else 0.02
            if rng.random() < p:
                weight = rng.uniform(0.5, 1.5)
                src += [i, j]
                dst += [j, i]
                w += [weight, weight]
    centers = rng.normal(0, 1, size=(n_classes, n_feat))
    feats = centers[labels] + rng.normal(0, 1.5, size=(n_nodes, n_feat))
    edge_index = np.stack([np.array(src), np.array(dst)])
    return feats.astype(np.float32), edge_index, np.array(w), labels


class GCNLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.lin = nn.Linear(cin, cout)

    def forward(self, x, edge_index, edge_weight):
        src, dst = edge_index
        n = x.size(0)
        # symmetric normalisation with self loops
        deg = torch.ones(n, device=x.device).scatter_add(0, dst, edge_weight)
        inv_sqrt = deg.rsqrt()
        norm = inv_sqrt[src] * edge_weight * inv_sqrt[dst]
        h = self.lin(x)
        msg = h[src] * norm.unsqueeze(-1)
        agg = torch.zeros_like(h).scatter_add(0, dst.unsqueeze(-1).expand_as(msg), msg)
        return agg + h * inv_sqrt.pow(2).unsqueeze(-1)


class GCN(nn.Module):
    def __init__(self, n_feat, hidden, n_classes):
        super().__init__()
        self.l1 = GCNLayer(n_feat, hidden)
        self.l2 = GCNLayer(hidden, n_classes)
        self.drop = nn.Dropout(0.2)

    def forward(self, x, edge_index, edge_weight):
        h = F.relu(self.l1(x, edge_index, edge_weight))
        return self.l2(self.drop(h), edge_index, edge_weight)


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    feats, edges, weights, labels = community_graph()
    x = torch.from_numpy(feats).to(device)
    edge_index = torch.from_numpy(edges).long().to(device)
    edge_weight = torch.from_numpy(weights).to(device)   # float64 from NumPy
    y = torch.from_numpy(labels).to(device)
    train_mask = torch.arange(len(labels), device=device) % 4 != 0

    model = GCN(feats.shape[1], 32, int(labels.max()) + 1).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for step in range(12):
        model.train()
        opt.zero_grad()
        out = model(x, edge_index, edge_weight)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        opt.step()
        xm.mark_step()
        acc = (out.argmax(-1)[~train_mask] == y[~train_mask]).float().mean()
        print(f"step {step} loss {loss.item():.4f} val_acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
