"""LR range test, then a short training run at the learning rate it picks.

The model's and the optimizer's states are snapshotted with deepcopy before the sweep and restored after it, so the
real run starts from the same initialisation. The sweep's learning rates live in a device tensor (log-spaced) and the
smoothed loss is tracked on the device.
"""
import argparse
import copy
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

ap = argparse.ArgumentParser()
ap.add_argument("--trials", type=int, default=16)
ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "6")))
args = ap.parse_args()


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def data(gen, n=32):
    x = torch.randn(n, 1, 16, 16, generator=gen)
    y = (x[:, 0, :8].mean(dim=(1, 2)) * 20).long().clamp(-5, 4) + 5
    return x, y


dev = xm.xla_device()
torch.manual_seed(0)
model = SmallCNN().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

init_model = copy.deepcopy(model.state_dict())
init_opt = copy.deepcopy(opt.state_dict())

lrs = torch.logspace(-4, 0, args.trials, device=dev)
smoothed = torch.zeros((), device=dev)
beta = 0.8
history = []
gen = torch.Generator().manual_seed(3)
best = math.inf
for i in range(args.trials):
    for g in opt.param_groups:
        g["lr"] = lrs[i].item()
    x, y = data(gen)
    x, y = x.to(dev), y.to(dev)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    smoothed = beta * smoothed + (1 - beta) * loss.detach()
    debiased = smoothed / (1 - beta ** (i + 1))
    xm.mark_step()
    val = debiased.item()
    history.append((lrs[i].item(), val))
    if val > 4 * best:
        break
    best = min(best, val)

lr_curve = torch.stack([lrs[: len(history)], torch.tensor([h[1] for h in history], device=dev)])
slopes = lr_curve[1, 1:] - lr_curve[1, :-1]
pick = lr_curve[0, int(slopes.argmin().item())] / 10
chosen = pick.item()
print(f"swept {len(history)} rates, chosen lr {chosen:.2e}", "DTYPES", lrs.dtype, smoothed.dtype, lr_curve.dtype)

model.load_state_dict(init_model)
opt.load_state_dict(init_opt)
for g in opt.param_groups:
    g["lr"] = chosen
gen = torch.Generator().manual_seed(5)
for step in range(args.steps):
    x, y = data(gen)
    x, y = x.to(dev), y.to(dev)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.5f}")
torch.save({"lr_curve": lr_curve.cpu(), "model": model.state_dict()}, "/tmp/lr_find_result.pt")
res = torch.load("/tmp/lr_find_result.pt")
print("SAVED", res["lr_curve"].dtype, res["model"]["fc.weight"].dtype)
