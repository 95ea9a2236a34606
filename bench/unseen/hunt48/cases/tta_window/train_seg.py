"""Per-timestep segmentation of long 1-D signals with a small dilated Conv1d net."""
import argparse
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from infer import predict

parser = argparse.ArgumentParser()
parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "seg1d_preds.npz"))
parser.add_argument("--win", type=int, default=64)
parser.add_argument("--hop", type=int, default=32)
args = parser.parse_args()

STEPS = int(os.environ.get("STEPS", 10))
K = 3
dev = xm.xla_device()
torch.manual_seed(0)
rng = np.random.default_rng(0)


def make_signal(L):
    labels = np.repeat(rng.integers(0, K, L // 16), 16)
    freqs = np.array([0.05, 0.15, 0.3])[labels]
    t = np.arange(L)
    x = np.stack([np.sin(2 * np.pi * freqs * t), np.cos(2 * np.pi * freqs * t)]) + 0.3 * rng.standard_normal((2, L))
    return torch.from_numpy(x).float(), torch.from_numpy(labels)


class Seg(nn.Module):
    def __init__(self, c_in=2, h=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(c_in, h, 5, padding=2), nn.ReLU(),
            nn.Conv1d(h, h, 5, padding=4, dilation=2), nn.ReLU(),
            nn.Conv1d(h, K, 1))

    def forward(self, x):
        return self.net(x)


model = Seg().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
crit = nn.CrossEntropyLoss()

for step in range(STEPS):
    xs, ys = zip(*[make_signal(args.win) for _ in range(8)])
    x = torch.stack(xs).to(dev)
    y = torch.stack(ys).to(dev)
    loss = crit(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")

test = [make_signal(256)[0] for _ in range(3)]
out = predict(model, test, args.win, args.hop, dev)
np.savez(args.out, **out)
print("saved", args.out, {k: (v.shape, v.dtype) for k, v in out.items()})
print("DTYPES", next(model.parameters()).dtype, out["probs"].dtype)
