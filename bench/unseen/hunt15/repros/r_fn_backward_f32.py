"""clipact_helm, stochastic, migrated by hand the plain way (tool refused, BFM085): model.to(bf16), input cast, the
custom Function's backward left as written (it returns an f32 gradient for a bf16 input). Does it run, which dtype do
the gradients reach the parameters in, and do the dots stay bf16? Run with MIGRATED=1 for the hand migration, without
it under XLA_USE_BF16=1 for the legacy run."""
import os

import torch
import torch.nn as nn
import torch_xla
from _ir import dot_dtypes, ir_dtype


class SoftThreshold(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(x)
        ctx.lam = lam
        return torch.sign(x) * torch.clamp(x.abs() - lam, min=0.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        active = (x.float().abs() > ctx.lam).float()
        g = grad_out.float() * active
        print("  backward returns", g.dtype, "IR", ir_dtype(g), "for an input of", x.dtype)
        return g, None


torch.manual_seed(0)
mig = os.environ.get("MIGRATED") == "1"
dev = torch_xla.device()
fc1, fc2 = nn.Linear(20, 64).to(dev), nn.Linear(64, 4).to(dev)
x = torch.randn(32, 20).to(dev)
if mig:
    fc1.to(torch.bfloat16); fc2.to(torch.bfloat16); x = x.to(torch.bfloat16)
h = SoftThreshold.apply(fc1(x), 0.05)
loss = fc2(h).float().pow(2).mean() if mig else fc2(h).pow(2).mean()
loss.backward()
print("fc1.weight.grad", fc1.weight.grad.dtype, "IR", ir_dtype(fc1.weight.grad), "dots", dot_dtypes(fc1.weight.grad))
torch_xla.sync()
print("synced; loss", loss.item())
