"""Domain-adversarial training (DANN, Ganin & Lempitsky) of a small MLP on two synthetic domains.

The source domain is labelled, the target domain (the same three classes, rotated and shifted) is not.
A gradient reversal layer sits between the features and the domain classifier: the features learn to
make the domains indistinguishable while the label head learns the classes.
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class GradReverse(torch.autograd.Function):
    """Identity forward; backward multiplies the gradient by -coeff (coeff a 0-d device tensor)."""

    @staticmethod
    def forward(ctx, x, coeff):
        ctx.save_for_backward(coeff)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        (coeff,) = ctx.saved_tensors
        return grad_output * (-coeff), None


class LeakyClamp(torch.autograd.Function):
    """Hard-tanh with a leaky gradient outside [-1, 1], so saturated units still learn."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        slope = torch.where(x.abs() <= 1.0, torch.ones_like(x), torch.full_like(x, 0.05))
        return grad_output * slope


class DANN(nn.Module):
    def __init__(self, d_in=8, hidden=32, n_classes=3):
        super().__init__()
        self.f1 = nn.Linear(d_in, hidden)
        self.f2 = nn.Linear(hidden, hidden)
        self.label_head = nn.Linear(hidden, n_classes)
        self.domain_head = nn.Sequential(nn.Linear(hidden, 16), nn.ReLU(), nn.Linear(16, 1))

    def features(self, x):
        return LeakyClamp.apply(self.f2(LeakyClamp.apply(self.f1(x))))

    def forward(self, x, coeff):
        h = self.features(x)
        return self.label_head(h), self.domain_head(GradReverse.apply(h, coeff)).squeeze(-1)


def make_domain(n, shift, angle, rng):
    centres = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    y = rng.integers(0, 3, size=n)
    xy = centres[y] + 0.6 * rng.standard_normal((n, 2))
    rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    xy = xy @ rot.T + shift
    noise = 0.3 * rng.standard_normal((n, 6))
    x = np.concatenate([xy, np.tanh(xy[:, :1] * xy[:, 1:]) + noise[:, :1], noise[:, 1:]], axis=1)
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def grl_schedule(step, total):
    p = step / max(1, total - 1)
    return 2.0 / (1.0 + math.exp(-10.0 * p)) - 1.0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--patience", type=int, default=6)
    ap.add_argument("--out", default="out")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    xs, ys = make_domain(1024, np.array([0.0, 0.0]), 0.0, rng)
    xt, yt = make_domain(1024, np.array([0.8, -0.5]), 0.5, rng)
    xt_val, yt_val = xt[-256:].to(torch_xla.device()), yt[-256:].to(torch_xla.device())

    device = torch_xla.device()
    model = DANN().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    dom_target = torch.cat([torch.zeros(args.batch), torch.ones(args.batch)]).to(device)

    hist = {"loss": [], "val": [], "coeff": []}
    best, bad = float("inf"), 0
    for step in range(args.steps):
        i = torch.randint(0, 1024, (args.batch,))
        j = torch.randint(0, 768, (args.batch,))
        x = torch.cat([xs[i], xt[j]]).to(device)
        y = ys[i].to(device)
        coeff = torch.tensor(grl_schedule(step, args.steps), device=device)

        logits, dom = model(x, coeff)
        cls_loss = F.cross_entropy(logits[: args.batch], y)
        dom_loss = F.binary_cross_entropy_with_logits(dom, dom_target)
        loss = cls_loss + dom_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()

        with torch.no_grad():
            val_logits, _ = model(xt_val, coeff)
            val = F.cross_entropy(val_logits, yt_val)
        torch_xla.sync()
        hist["loss"].append(loss.item())
        hist["val"].append(val.item())
        hist["coeff"].append(float(coeff))
        best = min(best, val.item())
        bad = 0 if val.item() <= best else bad + 1
        if step % 5 == 0:
            print(f"step {step:3d} loss {loss.item():.4f} dom {dom_loss.item():.4f} val {val.item():.4f} coeff {coeff.item():.3f}")
        if bad >= args.patience:
            print(f"early stop at step {step}")
            break

    with torch.no_grad():
        acc = (model(xt_val, coeff)[0].argmax(1) == yt_val).float().mean()
    hist["best_val"] = best
    hist["target_acc"] = acc.item()
    print(f"target accuracy {acc.item():.4f}, best val {best:.4f}")
    with open(os.path.join(args.out, "history.json"), "w") as f:
        json.dump(hist, f)
    xm.save(model.state_dict(), os.path.join(args.out, "dann.pt"))
    return hist


if __name__ == "__main__":
    main()
