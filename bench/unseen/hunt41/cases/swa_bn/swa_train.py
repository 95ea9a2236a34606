"""Stochastic weight averaging done by hand.

The averaged weights live in a dict of device tensors updated with a running mean; the learning-rate schedule is a
device tensor (cosine, then a constant SWA rate) applied through a hand-written SGD step; at the end the averaged
weights are loaded into a copy of the model and its BatchNorm statistics recomputed over the training data
(what torch.optim.swa_utils.update_bn does), and both models are evaluated.
"""
import argparse
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
ap.add_argument("--swa-start", type=int, default=3)
args = ap.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def batches(seed, n, bs=16):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        x = torch.randn(bs, 3, 8, 8, generator=g)
        y = (x[:, 0].mean(dim=(1, 2)) > 0).long() + 2 * (x[:, 1].mean(dim=(1, 2)) > 0).long()
        yield x, y


dev = xm.xla_device()
torch.manual_seed(0)
model = Net().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
base_lr, swa_lr = 0.1, 0.02
t = torch.arange(args.steps, device=dev, dtype=torch.float32)
sched = torch.where(
    t < args.swa_start, swa_lr + 0.5 * (base_lr - swa_lr) * (1 + torch.cos(math.pi * t / args.swa_start)), swa_lr
)

swa_state = {k: torch.zeros_like(v) for k, v in model.state_dict().items() if v.is_floating_point()}
n_avg = 0
for step, (x, y) in enumerate(batches(0, args.steps)):
    x, y = x.to(dev), y.to(dev)
    lr_now = sched[step]
    for group in opt.param_groups:
        group["lr"] = lr_now
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if step >= args.swa_start:
        with torch.no_grad():
            for k, v in model.state_dict().items():
                if k in swa_state:
                    swa_state[k] += (v - swa_state[k]) / (n_avg + 1)
        n_avg += 1
    xm.mark_step()
    print(f"step {step} lr {lr_now.item():.4f} loss {loss.item():.5f}")

swa_model = Net().to(dev)
swa_model.load_state_dict({**model.state_dict(), **swa_state})
# recompute BatchNorm statistics for the averaged weights (update_bn by hand)
moms = {}
for m in swa_model.modules():
    if isinstance(m, nn.BatchNorm2d):
        m.reset_running_stats()
        moms[m] = m.momentum
        m.momentum = None
swa_model.train()
with torch.no_grad():
    for x, _ in batches(0, 4):
        swa_model(x.to(dev))
for m, mom in moms.items():
    m.momentum = mom

swa_model.eval()
model.eval()
correct = torch.zeros(2, device=dev)
with torch.no_grad():
    for x, y in batches(99, 3):
        x, y = x.to(dev), y.to(dev)
        correct[0] += (model(x).argmax(1) == y).sum()
        correct[1] += (swa_model(x).argmax(1) == y).sum()
acc = (correct / 48).cpu()
print("DTYPES", sched.dtype, swa_state["conv.weight"].dtype, swa_model.bn.running_var.dtype, acc.dtype)
print("acc last/swa", acc.tolist())
torch.save(swa_model.state_dict(), "/tmp/swa_bn_model.pt")
print("SAVED", torch.load("/tmp/swa_bn_model.pt")["bn.running_mean"].dtype)
