# A KV cache kept as a plain tensor attribute, moved to the device and written in place in forward.
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class CachedAttn(nn.Module):
    def __init__(self, d=16, t_max=32):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.t_max = t_max
        self.k_cache = torch.zeros(1, t_max, d)
        self.v_cache = torch.zeros(1, t_max, d)

    def forward(self, x, pos):
        q, k, v = self.qkv(x).chunk(3, -1)
        self.k_cache = self.k_cache.to(x.device)
        self.v_cache = self.v_cache.to(x.device)
        self.k_cache[:, pos:pos + 1] = k
        self.v_cache[:, pos:pos + 1] = v
        att = (q @ self.k_cache[:, :pos + 1].transpose(1, 2)).softmax(-1)
        return att @ self.v_cache[:, :pos + 1]


dev = torch_xla.device()
torch.manual_seed(0)
m = CachedAttn().to(dev).eval()
x = torch.randn(1, 1, 16).to(dev)
with torch.no_grad():
    for pos in range(4):
        x = m(x, pos)
        torch_xla.sync()
        print(pos, x.sum().item())
print("dtype", m.qkv.weight.dtype, m.k_cache.dtype, x.dtype)
