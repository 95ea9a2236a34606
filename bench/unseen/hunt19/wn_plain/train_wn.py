"""1-D signal classifier with weight-normed layers: train, checkpoint, resume, then temperature scaling."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm

p = argparse.ArgumentParser()
p.add_argument("--bf16", action="store_true")
p.add_argument("--ckpt", default="out/wn.pt")
args = p.parse_args()
os.environ["XLA_USE_BF16"] = "1"  # the job always ran in bf16

import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402


class SignalNet(nn.Module):
    def __init__(self, n_cls=4):
        super().__init__()
        self.conv = weight_norm(nn.Conv1d(1, 8, 5, padding=2))
        self.conv2 = weight_norm(nn.Conv1d(8, 8, 3, padding=1))
        self.fc = weight_norm(nn.Linear(8, n_cls))

    def forward(self, x):
        h = F.gelu(self.conv(x))
        h = F.gelu(self.conv2(h)) + h
        return self.fc(h.amax(-1))


def batches(n, device, gen):
    for _ in range(n):
        y = torch.randint(0, 4, (32,), generator=gen)
        t = torch.linspace(0, 1, 64)
        x = torch.sin(2 * 3.14159 * (y[:, None] + 1) * t) + 0.3 * torch.randn(32, 64, generator=gen)
        yield x[:, None, :].to(device), y.to(device)


def train(model, opt, device, steps, gen):
    model.train()
    for x, y in batches(steps, device, gen):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
    return loss.item()


def main():
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(1)
    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    model = SignalNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    print("phase 1 loss", train(model, opt, device, 4, gen))
    xm.save({"model": model.state_dict(), "opt": opt.state_dict()}, args.ckpt)

    # resume into fresh objects, as a restarted job would
    model = SignalNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    state = torch.load(args.ckpt)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    print("phase 2 loss", train(model, opt, device, 4, gen))

    # temperature scaling on held-out logits
    model.eval()
    with torch.no_grad():
        held = list(batches(3, device, gen))
        logits = torch.cat([model(x) for x, _ in held])
        labels = torch.cat([y for _, y in held])
    temp = nn.Parameter(torch.ones(1, device=device))
    lbfgs = torch.optim.LBFGS([temp], lr=0.05, max_iter=30)

    def closure():
        lbfgs.zero_grad()
        nll = F.cross_entropy(logits / temp, labels)
        nll.backward()
        return nll

    lbfgs.step(closure)
    torch_xla.sync()
    nll = F.cross_entropy(logits / temp, labels)
    print(f"temperature {temp.item():.3f} nll {nll.item():.4f}")
    torch.save({"temperature": temp.detach().cpu(), "g": model.fc.parametrizations.weight.original0.cpu()}, "out/calib.pt")


if __name__ == "__main__":
    main()
