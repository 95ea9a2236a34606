"""Sharpness-aware minimisation (SAM) of a weight-normed MLP classifier; the perturbed loss is taken
with torch.func.functional_call over a dict of perturbed parameters."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call
from torch.nn.utils import weight_norm
import torch_xla
import torch_xla.core.xla_model as xm


class WNClassifier(nn.Module):
    def __init__(self, d_in=20, hidden=64, n_cls=5):
        super().__init__()
        self.fc1 = weight_norm(nn.Linear(d_in, hidden))
        self.fc2 = weight_norm(nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, n_cls)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = self.drop(F.relu(self.fc2(h)))
        return self.head(h)


def make_blobs(n, d_in, n_cls, gen):
    centers = torch.randn(n_cls, d_in, generator=gen) * 2.0
    y = torch.randint(0, n_cls, (n,), generator=gen)
    x = centers[y] + torch.randn(n, d_in, generator=gen)
    return x, y


def sam_step(model, opt, x, y, rho, clip):
    params = {k: v for k, v in model.named_parameters() if v.requires_grad}
    loss = F.cross_entropy(model(x), y)
    grads = torch.autograd.grad(loss, list(params.values()))
    gnorm = torch.norm(torch.stack([g.norm(2) for g in grads]), 2)
    scale = rho / (gnorm + 1e-12)
    perturbed = {k: p.detach() + scale * g for (k, p), g in zip(params.items(), grads)}
    perturbed = {k: v.requires_grad_() for k, v in perturbed.items()}
    sharp_loss = F.cross_entropy(functional_call(model, perturbed, (x,)), y)
    sharp_grads = torch.autograd.grad(sharp_loss, list(perturbed.values()))
    opt.zero_grad()
    for p, g in zip(params.values(), sharp_grads):
        p.grad = g
    torch.nn.utils.clip_grad_value_(model.parameters(), clip)
    xm.optimizer_step(opt)
    return loss.detach(), sharp_loss.detach()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rho", type=float, default=0.05)
    ap.add_argument("--clip", type=float, default=0.5)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    device = torch_xla.device()

    x_all, y_all = make_blobs(1024, 20, 5, gen)
    model = WNClassifier().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    for step in range(args.steps):
        idx = torch.randint(0, x_all.shape[0], (64,), generator=gen)
        x, y = x_all[idx].to(device), y_all[idx].to(device)
        model.train()
        loss, sharp = sam_step(model, opt, x, y, args.rho, args.clip)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} sharp {sharp.item():.4f}")

    model.eval()
    with torch.no_grad():
        logits = model(x_all[:256].to(device))
        acc = (logits.argmax(-1).cpu() == y_all[:256]).float().mean()
        g = model.fc1.weight_g.detach().cpu()
    print(f"train acc {acc.item():.3f}  |g| mean {g.abs().mean().item():.4f} dtype {g.dtype}")


if __name__ == "__main__":
    main()
