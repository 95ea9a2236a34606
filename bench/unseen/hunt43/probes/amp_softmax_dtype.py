"""Which dtype does softmax of a bf16 matmul output have under torch.autocast("xla") (mixup_ls amp's finfo eps)?"""
import torch
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
lin = torch.nn.Linear(4, 5).to(dev)
x = torch.randn(3, 4, device=dev)
with torch.autocast("xla", dtype=torch.bfloat16):
    logits = lin(x)
    probs = logits.softmax(dim=-1)
    print("logits", logits.dtype, "probs", probs.dtype, "eps", torch.finfo(probs.dtype).eps)
