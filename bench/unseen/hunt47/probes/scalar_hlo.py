"""How a Python-int divisor enters the graph for a bf16 tensor (the migration) and for an f32 tensor under
XLA_USE_BF16 (the legacy run): run with and without the switch (probes/scalar_hlo.sh)."""
import os

import torch
import torch_xla
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
dtype = torch.float32 if os.environ.get("XLA_USE_BF16") == "1" else torch.bfloat16
m = torch.zeros(4, device=dev, dtype=dtype)
for c in (256, 257, 258):
    m = m + (torch.ones(4, device=dev, dtype=dtype) - m) / c
hlo = torch_xla._XLAC._get_xla_tensors_hlo([m])
print("\n".join(line for line in hlo.splitlines() if "parameter(" in line or "constant(" in line or "divide" in line))
