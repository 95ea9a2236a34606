"""An MLP classifier trained with mixup and hand-written label smoothing."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

NUM_CLASSES = 4


def smoothed_ce(logits, target, eps=0.1):
    one_hot = F.one_hot(target, NUM_CLASSES).float()
    soft = one_hot * (1 - eps) + eps / NUM_CLASSES
    return -(soft * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, NUM_CLASSES)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    protos = torch.randn(NUM_CLASSES, 16)
    for step in range(12):
        y = torch.randint(0, NUM_CLASSES, (32,))
        x = (protos[y] + 0.3 * torch.randn(32, 16)).to(device)
        y = y.to(device)
        lam = float(rng.beta(0.4, 0.4))
        perm = torch.randperm(x.size(0), device=device)
        mixed = lam * x + (1 - lam) * x[perm]
        logits = model(mixed)
        loss = lam * smoothed_ce(logits, y) + (1 - lam) * smoothed_ce(logits, y[perm])
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        acc = (logits.argmax(-1) == y).float().mean()
        print(f"step {step} loss {loss.item():.4f} acc {acc.item():.3f}")


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
