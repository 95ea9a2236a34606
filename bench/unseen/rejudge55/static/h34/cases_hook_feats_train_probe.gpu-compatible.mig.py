"""Train a small CNN on synthetic textures, then fit a NumPy linear probe on the
embedding layer's output, captured by a forward hook during an evaluation pass."""
import os
import sys

if os.environ.get("XLA_USE_BF16") != "1":
    # TPU runs want bf16: re-exec ourselves with the switch on, before torch_xla is imported
    env = dict(os.environ, XLA_USE_BF16="1")
    os.execvpe(sys.executable, [sys.executable] + sys.argv, env)

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
device = torch_xla.device()


def make_batch(n, gen):
    labels = torch.randint(0, 4, (n,), generator=gen)
    freqs = (labels.float() + 1.0).view(n, 1, 1, 1)
    grid = torch.linspace(0, 6.28, 16)
    img = torch.sin(freqs * grid.view(1, 1, 1, 16)) * torch.cos(freqs * grid.view(1, 1, 16, 1))
    img = img + 0.3 * torch.randn(n, 1, 16, 16, generator=gen)
    return img, labels


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.embed = nn.Linear(16, 12)
        self.head = nn.Linear(12, 4)

    def forward(self, x):
        return self.head(F.relu(self.embed(self.body(x))))


model = Net().to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
gen = torch.Generator().manual_seed(1)
loss_hist = []
for step in range(10):
    x, y = make_batch(32, gen)
    x, y = x.to(device), y.to(device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    loss_hist.append(loss.detach().cpu())
    print(f"step {step} loss {loss.item():.4f}")

feats = []
handle = model.embed.register_forward_hook(lambda mod, inp, out: feats.append(out.detach().cpu()))
model.eval()
labels = []
with torch.no_grad():
    for _ in range(4):
        x, y = make_batch(32, gen)
        model(x.to(device))
        labels.append(y.numpy())
handle.remove()

X = np.concatenate(feats)  # the hook's host tensors, stacked by NumPy
Y = np.concatenate(labels)
Xb = np.hstack([X, np.ones((len(X), 1))])
W, *_ = np.linalg.lstsq(Xb, np.eye(4)[Y], rcond=None)
probe_acc = float(np.mean((Xb @ W).argmax(1) == Y))
print("DTYPES feats", feats[0].dtype, "X", X.dtype, "weight", model.embed.weight.dtype)
print(f"mean train loss {np.mean(loss_hist):.4f}  probe acc {probe_acc:.3f}")
