"""Probe for r_explicit_f32_device_tensor: with no switch, a bf16 tensor plus a 0-dim f32 *device* tensor
(`x + h / 2`): what dtype does PyTorch report and what does the XLA IR hold, before and after `.to(bf16)`?"""
import torch
import torch_xla
from _ir import ir_dtype

dev = torch_xla.device()
x = torch.randn(16, 3).to(dev, dtype=torch.bfloat16)
ts = torch.tensor([0.0, 0.1], dtype=torch.float32, device=dev)
h = ts[1] - ts[0]
for name, t in [("x + h / 2", x + h / 2), ("x + h", x + h), ("h * x", h * x), ("(x + h / 2).to(bf16)", (x + h / 2).to(torch.bfloat16))]:
    print(f"{name:24s} torch dtype {t.dtype}  IR dtype {ir_dtype(t)}")
w = torch.randn(1, 3).to(dev, dtype=torch.bfloat16)
out = torch.nn.functional.linear((x + h / 2).to(torch.bfloat16), w)
print("linear IR", ir_dtype(out))
torch_xla.sync()
print("sync ok", out.cpu().dtype)
