"""Does F.normalize of a float64 device tensor run under XLA_USE_BF16 (no verify, no tracer)? argv[1]: 'normalize' or 'byhand'."""
import os
import sys

os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn.functional as F
import torch_xla

dev = torch_xla.device()
c = torch.from_numpy(np.random.default_rng(0).normal(size=(3, 4))).to(dev)
if sys.argv[1] == "normalize":
    out = F.normalize(c, dim=1)
else:
    out = c / c.norm(dim=1, keepdim=True)
torch_xla.sync()
print(sys.argv[1], out.sum().item())
