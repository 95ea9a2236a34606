"""Quantisation-aware training of an MLP regressor: activations go through a fake
quantiser (straight-through estimator) whose range is tracked by an EMA observer."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def downcast_bf16(module):
    """Cast `module` in place as the legacy bf16 downcast environment switch held it on the XLA
    device: float32 parameters and buffers become torch.bfloat16, float64 ones float32, every other
    one (integer buffers) stays as it is. Returns `module`.

    Added by bf16-migrate in place of `module.to(torch.bfloat16)` for a model with float64 state (a
    submodule built in float64, a parameter or buffer made from float64 data), which that cast would
    round to bf16.
    """
    dtypes = {torch.float32: torch.bfloat16, torch.float64: torch.float32}
    return module._apply(lambda t: t.to(dtypes[t.dtype]) if t.dtype in dtypes else t)


class FakeQuant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi, levels):
        scale = (hi - lo) / (levels - 1)
        inside = ((x >= lo) & (x <= hi)).to(x.dtype)
        ctx.save_for_backward(inside)
        return torch.round((torch.maximum(torch.minimum(x, hi), lo) - lo) / scale) * scale + lo

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside, None, None, None


class RangeObserver(nn.Module):
    def __init__(self, momentum=0.1, levels=16):
        super().__init__()
        self.momentum, self.levels = momentum, levels
        # float64 so that the range statistics stay fp32 under XLA_DOWNCAST_BF16
        self.register_buffer("lo", torch.zeros((), dtype=torch.float64))
        self.register_buffer("hi", torch.ones((), dtype=torch.float64))

    def forward(self, x):
        if self.training:
            m = self.momentum
            self.lo.mul_(1 - m).add_(x.detach().min().float() * m)
            self.hi.mul_(1 - m).add_(x.detach().max().float() * m)
        return FakeQuant.apply(x, self.lo.float(), self.hi.float(), self.levels).to(self.lo.dtype).to(self.hi.dtype)


class QMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.q1 = nn.Linear(10, 48), RangeObserver()
        self.fc2, self.q2 = nn.Linear(48, 48), RangeObserver()
        self.out = nn.Linear(48, 1)

    def forward(self, x):
        h = self.q1(F.relu(self.fc1(x)))
        h = self.q2(F.relu(self.fc2(h)))
        return self.out(h).squeeze(-1)


torch.manual_seed(0)
device = torch_xla.device()
model = QMLP().to(device)
downcast_bf16(model)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
w = torch.randn(10)
for step in range(10):
    x = torch.randn(64, 10)
    y = torch.sin(x @ w) + 0.05 * torch.randn(64)
    x, y = x.to(device), y.to(device)
    loss = F.mse_loss(model(x.to(torch.bfloat16)), y.to(torch.bfloat16))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")
print("DTYPES fc1", model.fc1.weight.dtype, "lo", model.q1.lo.dtype, "loss", loss.dtype)
print(f"ranges q1 [{model.q1.lo.item():.3f}, {model.q1.hi.item():.3f}]")
