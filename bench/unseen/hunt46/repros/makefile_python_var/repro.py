"""Domain-adversarial training with a gradient reversal layer (custom autograd.Function)."""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(lam)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        (lam,) = ctx.saved_tensors
        return grad_output.neg() * lam, None


class DANN(nn.Module):
    def __init__(self, d_in=8, hidden=32, n_classes=3):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.label_head = nn.Linear(hidden, n_classes)
        self.domain_head = nn.Sequential(nn.Linear(hidden, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x, lam):
        f = self.features(x)
        return self.label_head(f), self.domain_head(GradReverse.apply(f, lam)).squeeze(-1)


def make_domain(rng, n, shift):
    y = rng.integers(0, 3, n)
    x = rng.standard_normal((n, 8)) + np.eye(3, 8)[y] * 2.0 + shift
    return x.astype(np.float32), y


def main():
    steps = int(os.environ.get("STEPS", "8"))
    dev = torch_xla.device()
    torch.manual_seed(0)
    model = DANN().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    rng = np.random.default_rng(0)
    for step in range(steps):
        p = step / max(steps - 1, 1)
        lam = torch.tensor(2.0 / (1.0 + math.exp(-10 * p)) - 1.0, device=dev)
        xs, ys = make_domain(rng, 16, 0.0)
        xt, _ = make_domain(rng, 16, 0.8)
        x = torch.from_numpy(np.concatenate([xs, xt])).to(dev)
        d = torch.cat([torch.zeros(16), torch.ones(16)]).to(dev)
        cls_logits, dom_logits = model(x, lam)
        cls_loss = F.cross_entropy(cls_logits[:16], torch.from_numpy(ys).to(dev))
        dom_loss = F.binary_cross_entropy_with_logits(dom_logits, d)
        loss = cls_loss + dom_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} cls {cls_loss.item():.5f} dom {dom_loss.item():.5f} lam {lam.item():.3f}")
    print("DTYPES", next(model.parameters()).dtype, lam.dtype, dom_logits.dtype)


if __name__ == "__main__":
    main()
