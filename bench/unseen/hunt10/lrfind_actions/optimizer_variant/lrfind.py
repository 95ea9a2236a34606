"""Learning-rate range test for a small CNN, run on the XLA device with the default device set,
a trainer class with callbacks, activation statistics from forward hooks, and a metric object."""
import argparse
import os
os.environ["XLA_USE_BF16"] = "1"  # variant: the switch in the script, the optimizer built in main
import copy
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


class MeanMetric:
    def __init__(self):
        self.total = torch.zeros(())        # on the default device
        self.count = 0

    def update(self, value, n):
        self.total += value.detach() * n
        self.count += n

    def compute(self):
        return (self.total / max(self.count, 1)).item()


class ActivationStats:
    """Forward hooks that keep each layer's mean absolute activation on the host."""

    def __init__(self, model, names):
        self.stats = {n: [] for n in names}
        self.handles = [getattr(model, n).register_forward_hook(self._hook(n)) for n in names]

    def _hook(self, name):
        def hook(module, inputs, output):
            self.stats[name].append(output.detach().abs().mean(dim=(0, 2, 3)).to("cpu").numpy())
        return hook

    def close(self):
        for h in self.handles:
            h.remove()


class RangeTest:
    def __init__(self, model, opt, lr_min, lr_max, steps):
        self.model, self.opt = model, opt
        self.lrs = torch.logspace(math.log10(lr_min), math.log10(lr_max), steps)
        self.callbacks = []

    def run(self, batches):
        start = copy.deepcopy(self.model.state_dict())
        opt = self.opt
        history, best, metric = [], float("inf"), MeanMetric()
        for i, (x, y) in enumerate(batches):
            for g in opt.param_groups:
                g["lr"] = self.lrs[i].item()
            loss = F.cross_entropy(self.model(x), y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_value_(self.model.parameters(), 0.5)
            finite = torch.stack([torch.isfinite(p.grad).all() for p in self.model.parameters()]).all()
            xm.optimizer_step(opt)
            torch_xla.sync()
            metric.update(loss, x.shape[0])
            value = loss.item()
            history.append(value)
            for cb in self.callbacks:
                cb(i, value, self.lrs[i].item())
            best = min(best, value)
            if not finite.item() or not math.isfinite(value) or value > 4 * best:
                break
        self.model.load_state_dict(start)
        return history, metric.compute()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="sweep")
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    device = torch_xla.device()
    torch.set_default_device(device)
    torch.manual_seed(0)
    model = Net()
    stats = ActivationStats(model, ["c1", "c2"])
    gen = np.random.default_rng(0)
    batches = []
    for _ in range(args.steps):
        y = torch.tensor(gen.integers(0, 10, size=32))      # on the default device
        x = torch.randn(32, 1, 16, 16) * 0.5 + y.view(-1, 1, 1, 1) / 10.0
        batches.append((x, y))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    rt = RangeTest(model, opt, 1e-3, 1.0, args.steps)
    rt.callbacks.append(lambda i, v, lr: xm.master_print(f"step {i} lr {lr:.4g} loss {v:.4f}"))
    history, mean_loss = rt.run(batches)
    stats.close()
    c1 = np.stack(stats.stats["c1"])
    np.save(os.path.join(args.out, "act_c1.npy"), c1)
    lrs = rt.lrs[: len(history)].cpu().numpy()
    slope = np.gradient(np.array(history), np.log10(lrs))
    json.dump({"lr": lrs.tolist(), "loss": history, "mean": mean_loss,
               "suggested": float(lrs[int(np.argmin(slope))])}, open(os.path.join(args.out, "lr.json"), "w"))
    print("mean loss", round(mean_loss, 4), "suggested lr", float(lrs[int(np.argmin(slope))]), "act", c1.dtype, c1.shape)


if __name__ == "__main__":
    main()
