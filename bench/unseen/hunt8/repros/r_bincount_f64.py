"""torch.bincount with floating weights on the XLA device: what dtype comes out?
Legacy (XLA_USE_BF16=1): run with BINCOUNT_LEGACY=1 (the switch is set below then)."""
import os
if os.environ.get("BINCOUNT_LEGACY") == "1":
    os.environ["XLA_USE_BF16"] = "1"
import torch
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
idx = torch.tensor([0, 1, 1, 3], device=dev)
for name, dt in [("f32", torch.float32), ("bf16", torch.bfloat16)]:
    w = torch.tensor([0.1, 0.2, 0.3, 0.4], device=dev, dtype=dt)
    out = torch.bincount(idx, weights=w, minlength=5)
    acc = torch.zeros(5, device=dev, dtype=dt)
    acc += out
    xm.mark_step()
    print(f"XLA_USE_BF16={os.environ.get('XLA_USE_BF16')} weights {name}: bincount -> {out.dtype}, "
          f"accumulated into {acc.dtype}; on the host {out.cpu().dtype} {out.cpu().tolist()}")
cpu = torch.bincount(torch.tensor([0, 1]), weights=torch.tensor([0.5, 0.25]))
print("CPU (no XLA) f32 weights ->", cpu.dtype)
