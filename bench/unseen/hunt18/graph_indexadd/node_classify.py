"""Node classification on a random graph: weighted mean aggregation with index_add_, then label propagation."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N, E, FEAT, CLASSES = 200, 1200, 16, 4


def make_graph(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (E,), generator=g)
    dst = torch.randint(0, N, (E,), generator=g)
    weight = torch.rand(E, generator=g) + 0.1
    labels = torch.randint(0, CLASSES, (N,), generator=g)
    feats = torch.randn(N, FEAT, generator=g) + F.one_hot(labels, CLASSES).repeat(1, FEAT // CLASSES)
    return src, dst, weight, feats, labels


class MeanAgg(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin_self = nn.Linear(d_in, d_out)
        self.lin_nbr = nn.Linear(d_in, d_out)

    def forward(self, h, src, dst, ew):
        msg = h[src] * ew[:, None]
        agg = torch.zeros_like(h).index_add_(0, dst, msg)
        deg = torch.zeros(h.shape[0], device=h.device).index_add_(0, dst, ew)
        agg = agg / deg.clamp(min=1e-3)[:, None]
        return self.lin_self(h) + self.lin_nbr(agg)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = MeanAgg(FEAT, 32)
        self.l2 = MeanAgg(32, CLASSES)

    def forward(self, x, src, dst, ew):
        return self.l2(F.relu(self.l1(x, src, dst, ew)), src, dst, ew)


def propagate(y0, src, dst, ew, alpha=0.8, iters=5):
    """Classic label propagation: smooth the soft labels over the weighted graph."""
    deg = torch.zeros(y0.shape[0], device=y0.device).index_add_(0, dst, ew).clamp(min=1e-3)
    y = y0
    for _ in range(iters):
        nbr = torch.zeros_like(y).index_add_(0, dst, y[src] * ew[:, None]) / deg[:, None]
        y = alpha * nbr + (1 - alpha) * y0
    return y


device = torch_xla.device()
src, dst, weight, feats, labels = make_graph()
src, dst, weight = src.to(device), dst.to(device), weight.to(device)
x, labels = feats.to(device), labels.to(device)
train_mask = torch.arange(N, device=device) < N // 2

net = Net().to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for epoch in range(10):
    logits = net(x, src, dst, weight)
    loss = F.cross_entropy(logits[train_mask], labels[train_mask])
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    torch_xla.sync()
    if epoch % 3 == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}")

with torch.no_grad():
    soft = torch.softmax(net(x, src, dst, weight), dim=-1)
    seed = torch.where(train_mask[:, None], F.one_hot(labels, CLASSES).float(), soft)
    smoothed = propagate(seed, src, dst, weight)
acc = (smoothed.argmax(-1) == labels)[~train_mask].float().mean()
torch_xla.sync()
print("test accuracy after propagation", acc.item())
