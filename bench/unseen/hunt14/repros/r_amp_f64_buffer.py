"""amp: a float64 buffer (NumPy slopes, as ALiBi reference code makes them) in an attention block.
Under XLA_USE_BF16 it was bf16 like everything else; under the amp migration's autocast it stays
float64, and the scores, the softmax and what follows are float64. Prints the dtypes of the HLO dots
of forward+backward and the IR dtype of the scores, with the buffer float64 (as the migration
leaves it) and float32 (buffer cast by hand)."""
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

from _ir import dot_dtypes, ir_dtype


class Att(nn.Module):
    def __init__(self, d=32, h=4, t=16):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("slopes", torch.from_numpy(np.array([2.0 ** -(i + 1) for i in range(h)])).view(h, 1, 1))
        pos = torch.arange(t)
        self.register_buffer("dist", (pos[None] - pos[:, None]).clamp(max=0).abs())

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-1, -2) / math.sqrt(d // self.h) - self.slopes * self.dist
        self.last_scores = s
        return self.proj((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))


dev = xm.xla_device()
torch.manual_seed(0)
for label in (["f64 buffer (as migrated)", "f32 buffer (by hand)"] if len(sys.argv) < 2 else [sys.argv[1]]):
    m = Att().to(dev)
    if label.startswith("f32"):
        m.slopes.data = m.slopes.data.float()
    x = torch.randn(2, 16, 32).to(dev)
    legacy = "XLA_USE_BF16" in __import__("os").environ
    if legacy:
        out = m(x)
    else:
        with torch.autocast("xla", dtype=torch.bfloat16):
            out = m(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    grads = [p.grad for p in m.parameters()]
    print(("legacy (XLA_USE_BF16)" if legacy else "amp, " + label),
          "| scores IR", ir_dtype(m.last_scores), "| forward dots", dot_dtypes(loss),
          "| backward dots", dot_dtypes(grads[0]))
    torch_xla.sync()
    if legacy:
        break
