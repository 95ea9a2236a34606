"""Legacy run of a complex64 RoPE buffer under XLA_USE_BF16=1 on the XLA device: `python probe.py view_as_complex|real_imag`."""
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Rope(nn.Module):
    def __init__(self, head_dim=8, seq=16):
        super().__init__()
        freqs = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        ang = torch.outer(torch.arange(seq).float(), freqs)
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(ang), ang), persistent=False)
        self.proj = nn.Linear(head_dim, head_dim)

    def forward(self, x):
        x = self.proj(x)
        fc = self.freqs_cis[: x.shape[1]].view(1, x.shape[1], 1, -1)
        if sys.argv[1] == "view_as_complex":
            xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * fc).flatten(3).type_as(x)
        cos = fc.real.repeat_interleave(2, dim=-1).type_as(x)
        sin = fc.imag.repeat_interleave(2, dim=-1).type_as(x)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return x * cos + torch.stack((-x2, x1), dim=-1).flatten(-2) * sin


dev = xm.xla_device()
m = Rope().to(dev)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(2):
    loss = m(torch.randn(2, 16, 4, 8).to(dev)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print("loss", loss.item())
print("buffer", m.freqs_cis.dtype)
