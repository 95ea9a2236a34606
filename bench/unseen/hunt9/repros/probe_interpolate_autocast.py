"""Does F.interpolate(bilinear) lower to dot ops on the XLA device, and in which dtype under autocast?"""
import re
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
x = torch.randn(2, 1, 8, 8, device=dev)
for label, ctx, inp in [("f32 input, autocast", torch.autocast("xla", dtype=torch.bfloat16), x),
                        ("bf16 input, no autocast", torch.autocast("xla", enabled=False), x.to(torch.bfloat16))]:
    with ctx:
        up = F.interpolate(inp, scale_factor=2, mode="bilinear", align_corners=False)
    hlo = torch_xla._XLAC._get_xla_tensors_hlo([up])
    dots = re.findall(r"= (\w+)\[[^\]]*\][^ ]* (dot|convolution)\(", hlo)
    print(label, "->", up.dtype, "dot/conv ops:", dots)
