"""A hand-written Elman RNN that learns a running sum; every setting comes from a
dataclass turned into command-line flags, the tensor dtype included (as a string)."""
import argparse
from dataclasses import dataclass, fields

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


@dataclass
class Config:
    hidden: int = 32
    seq_len: int = 12
    batch: int = 16
    lr: float = 3e-3
    steps: int = 10
    dtype: str = "float32"


def parse() -> Config:
    p = argparse.ArgumentParser()
    for f in fields(Config):
        p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    return Config(**vars(p.parse_args()))


class ElmanRNN(nn.Module):
    def __init__(self, d_in, hidden, dtype):
        super().__init__()
        self.hidden, self.dtype = hidden, dtype
        self.wx = nn.Linear(d_in, hidden)
        self.wh = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = torch.zeros(x.shape[0], self.hidden, dtype=self.dtype, device=x.device)
        for t in range(x.shape[1]):
            h = torch.tanh(self.wx(x[:, t]) + self.wh(h))
        return self.out(h).squeeze(-1)


def main():
    cfg = parse()
    dtype = getattr(torch, cfg.dtype)
    torch.manual_seed(0)
    device = torch_xla.device()
    model = ElmanRNN(1, cfg.hidden, dtype).to(device)
    model.to(torch.bfloat16)
    opt = torch.optim.RMSprop(model.parameters(), lr=cfg.lr)
    for step in range(cfg.steps):
        x = torch.rand(cfg.batch, cfg.seq_len, 1, dtype=dtype) - 0.5
        y = x.sum(dim=(1, 2))
        x, y = x.to(device), y.to(device)
        loss = nn.functional.smooth_l1_loss(model(x.to(torch.bfloat16)), y.to(torch.bfloat16))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES config", cfg.dtype, "wx", model.wx.weight.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
