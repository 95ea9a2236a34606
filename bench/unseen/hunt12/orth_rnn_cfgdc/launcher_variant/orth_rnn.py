"""Orthogonal RNN on the adding problem, trained by a hand-written SGD with momentum:
gradients from torch.autograd.grad, updates on p.data. No torch.optim."""
import os
from dataclasses import asdict, dataclass


@dataclass
class RunConfig:
    hidden: int = 32
    seq_len: int = 20
    batch: int = 64
    steps: int = 30
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 1e-4
    xla_use_bf16: str = "1"
    xla_ir_debug: str = "0"


CFG = RunConfig()
os.environ.update(dict(XLA_IR_DEBUG=CFG.xla_ir_debug))  # the bf16 switch comes from the launcher

import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrizations, parametrize
import torch_xla
import torch_xla.core.xla_model as xm


class OrthRNN(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.inp = nn.Linear(2, hidden)
        self.rec = parametrizations.orthogonal(nn.Linear(hidden, hidden, bias=False))
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], self.out.in_features)
        with parametrize.cached():
            for t in range(x.shape[1]):
                h = torch.tanh(self.rec(h) + self.inp(x[:, t]))
        return self.out(h).squeeze(-1)


def adding_batch(b, n, gen):
    vals = torch.rand(b, n, generator=gen)
    marks = torch.zeros(b, n)
    first = torch.randint(0, n // 2, (b,), generator=gen)
    second = torch.randint(n // 2, n, (b,), generator=gen)
    marks[torch.arange(b), first] = 1.0
    marks[torch.arange(b), second] = 1.0
    return torch.stack([vals, marks], dim=-1), (vals * marks).sum(1)


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    model = OrthRNN(CFG.hidden).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    velocity = [torch.zeros_like(p) for p in params]

    for step in range(CFG.steps):
        x, y = adding_batch(CFG.batch, CFG.seq_len, gen)
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g, v in zip(params, grads, velocity):
                g = g + CFG.weight_decay * p
                v.mul_(CFG.momentum).add_(g)
                p.data -= CFG.lr * v
        xm.mark_step()
        if step % 10 == 0 or step == CFG.steps - 1:
            print(f"step {step} mse {loss.item():.4f}")

    with torch.no_grad():
        W = model.rec.weight.detach().cpu().double()
        ortho_err = (W.T @ W - torch.eye(CFG.hidden, dtype=torch.float64)).abs().max().item()
        sv = torch.linalg.svdvals(model.rec.weight).cpu()
        xv, yv = adding_batch(256, CFG.seq_len, torch.Generator().manual_seed(1))
        val = F.mse_loss(model(xv.to(device)), yv.to(device)).item()
    print(f"val mse {val:.4f}  |W^T W - I|max {ortho_err:.2e}  sv range {sv.min():.3f}..{sv.max():.3f}")
    os.makedirs("out", exist_ok=True)
    with open("out/orth_rnn.json", "w") as fh:
        json.dump({"config": asdict(CFG), "val_mse": val, "ortho_err": ortho_err, "sv": sv.tolist()}, fh, indent=1)


if __name__ == "__main__":
    main()
