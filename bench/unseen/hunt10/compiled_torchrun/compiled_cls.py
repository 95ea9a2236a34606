"""A residual MLP classifier whose training step runs eagerly and whose evaluation runs through
torch.compile(backend="openxla"); temperature scaling fitted on the validation logits with LBFGS."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class ResMLP(nn.Module):
    def __init__(self, d_in=20, d=64, n_cls=4):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU()) for _ in range(3))
        self.out = nn.Linear(d, n_cls)

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = h + b(h)
        return self.out(h)


def data(rng, n):
    x = rng.normal(size=(n, 20)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + 2 * (x[:, 1] + 0.5 * x[:, 2] > 0).astype(np.int64)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = ResMLP().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(args.steps):
        xb, yb = data(rng, 128)
        xb, yb = torch.from_numpy(xb).to(device), torch.from_numpy(yb).to(device)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        xm.master_print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    infer = torch.compile(model, backend="openxla")
    xv, yv = data(rng, 512)
    xv, yv = torch.from_numpy(xv).to(device), torch.from_numpy(yv).to(device)
    with torch.no_grad():
        logits = infer(xv)
    torch_xla.sync()
    # temperature scaling on the device
    log_t = torch.zeros(1, device=device, requires_grad=True)
    lbfgs = torch.optim.LBFGS([log_t], lr=0.1, max_iter=20)

    def closure():
        lbfgs.zero_grad()
        nll = F.cross_entropy(logits / log_t.exp(), yv)
        nll.backward()
        return nll

    lbfgs.step(closure)
    torch_xla.sync()
    probs = F.softmax(logits / log_t.exp(), dim=-1).detach()
    acc = (probs.argmax(1) == yv).float().mean().item()
    conf = probs.max(1).values.cpu().numpy()
    print("val acc", round(acc, 4), "temperature", round(log_t.exp().item(), 4), "mean conf", float(conf.mean()), conf.dtype)


if __name__ == "__main__":
    main()
