"""Click-through-rate model (Deep & Cross) on synthetic logs; float64 dense features straight from NumPy."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
from torch_xla.amp import syncfree

N_DENSE, CARD = 6, (50, 20, 8)


class Logs(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.dense = np.log1p(rng.exponential(3.0, (n, N_DENSE)))            # float64
        self.cat = np.stack([rng.integers(0, c, n) for c in CARD], 1)
        logit = self.dense[:, 0] - 0.5 * self.dense[:, 1] + 0.8 * (self.cat[:, 0] % 3 == 0) - 1.0
        self.y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float64)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.dense[i]), torch.from_numpy(self.cat[i]), torch.tensor(self.y[i])


class DCN(nn.Module):
    def __init__(self, emb=8, layers=2):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(c, emb) for c in CARD)
        d = N_DENSE + emb * len(CARD)
        self.cross_w = nn.ParameterList(nn.Parameter(torch.randn(d) * 0.01) for _ in range(layers))
        self.cross_b = nn.ParameterList(nn.Parameter(torch.zeros(d)) for _ in range(layers))
        self.deep = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.out = nn.Linear(d + 32, 1)

    def forward(self, dense, cat):
        x0 = torch.cat([dense.float()] + [e(cat[:, i]) for i, e in enumerate(self.embs)], 1)
        x = x0
        for w, b in zip(self.cross_w, self.cross_b):
            x = x0 * (x @ w)[:, None] + b + x
        return self.out(torch.cat([x, self.deep(x0)], 1)).squeeze(1)


def log_step(step, loss, probs, labels):
    p, y = probs.cpu().numpy(), labels.cpu().numpy()
    print(f"step {step:4d} loss {loss.item():.4f} mean p {p.mean():.3f} base rate {y.mean():.3f}")


def _mp_fn(index, flags):
    device = xm.xla_device()
    torch.manual_seed(index)
    model = DCN().to(device)
    opt = syncfree.Adam(model.parameters(), lr=flags.lr)
    loader = torch.utils.data.DataLoader(Logs(4096, index), batch_size=flags.bs, shuffle=True, drop_last=True)
    pos_weight = torch.tensor([flags.pos_weight], dtype=torch.float64, device=device)
    step = 0
    for epoch in range(flags.epochs):
        for dense, cat, y in pl.MpDeviceLoader(loader, device):
            logits = model(dense, cat)
            loss = F.binary_cross_entropy_with_logits(logits, y, pos_weight=pos_weight)
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
            if step % 20 == 0:
                xm.add_step_closure(log_step, args=(step, loss, torch.sigmoid(logits.detach()), y))
            step += 1
        calib = torch.stack([torch.sigmoid(logits.detach()).sum(), y.sum()])
        calib = xm.all_reduce(xm.REDUCE_SUM, calib)
        xm.master_print("epoch", epoch, "predicted/observed clicks", calib.cpu().numpy().round(1))
    xm.master_print(met.metrics_report()[:200])
    xm.save(model.state_dict(), os.path.join(flags.out, "dcn.pt"))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--bs", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--pos_weight", type=float, default=1.5)
    p.add_argument("--out", default="/tmp")
    flags = p.parse_args()
    os.environ.update(XLA_DOWNCAST_BF16="1", XLA_USE_32BIT_LONG="1")
    xmp.spawn(_mp_fn, args=(flags,), nprocs=None)
