"""Quantisation-aware training of an MLP regressor: activations go through a fake
quantiser (straight-through estimator) whose range is tracked by an EMA observer."""
import os

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


def with_fp32_master_weights(optimizer_class):
    """Return a subclass of `optimizer_class` that keeps an FP32 master copy of bf16 weights.

    Added by bf16-migrate (gpu-compatible mode of Neuron's migration guide,
    replacing the legacy bf16 environment switch): the model's parameters stay bf16; each step
    runs the stock update in FP32 on the master weights (so its state, e.g. Adam's moments, is
    FP32 too) and copies the result into the bf16 parameters. `state_dict()` carries the master weights under
    "fp32_master_weights" (as torch-xla's ZeroRedundancyOptimizer does with save_master_weights)
    and `load_state_dict()` restores them, keeping the state FP32. A checkpoint without them, or
    weights changed outside the optimizer, start the master copy anew from the bf16 weights,
    with a warning.
    """
    import warnings

    class FP32MasterWeights(optimizer_class):
        def _swap_in_fp32(self, grads, loaded=None):
            # each bf16 parameter's data (and gradient) replaced by its FP32 master copy
            if not hasattr(self, "fp32_master_weights"):
                self.fp32_master_weights = {}  # parameter -> (master copy, parameter._version)
            swapped = []
            params = [p for group in self.param_groups for p in group["params"]]
            for index, param in enumerate(params):
                if param.dtype == torch.float32 or not param.is_floating_point() or (grads and param.grad is None):
                    continue
                if loaded is not None:
                    master = loaded.get(index)
                    if master is None:
                        warnings.warn("the checkpoint has no FP32 master weights (written before the migration?): they start anew from the bf16 weights")
                else:
                    master, version = self.fp32_master_weights.get(param, (None, None))
                    if master is not None and version != param._version:
                        warnings.warn("bf16 weights changed outside the optimizer: their FP32 master weights start anew from them")
                        master = None
                low_grad = param.grad
                swapped.append((param, param.data, low_grad))
                param.grad = None
                param.data = (param.detach() if master is None else master).to(device=param.device, dtype=torch.float32)
                if grads:
                    param.grad = low_grad.float()
            return swapped

        def _swap_back(self, swapped, copy_back):
            for param, low_data, low_grad in swapped:
                master = param.data
                if copy_back:
                    low_data.copy_(master)
                param.grad = None
                param.data = low_data
                param.grad = low_grad
                self.fp32_master_weights[param] = (master, param._version)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=True)
                try:
                    super().step()
                finally:
                    self._swap_back(swapped, copy_back=True)
            return loss

        def state_dict(self):
            with torch.no_grad():
                self._swap_back(self._swap_in_fp32(grads=False), copy_back=False)
            state_dict = super().state_dict()
            params = [p for group in self.param_groups for p in group["params"]]
            masters = self.fp32_master_weights
            state_dict["fp32_master_weights"] = {i: masters[p][0] for i, p in enumerate(params) if p in masters}
            return state_dict

        def load_state_dict(self, state_dict):
            state_dict = dict(state_dict)
            loaded = state_dict.pop("fp32_master_weights", {})
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=False, loaded=loaded)
                try:
                    super().load_state_dict(state_dict)  # floating state takes each parameter's dtype: FP32 here
                finally:
                    self._swap_back(swapped, copy_back=False)

    FP32MasterWeights.__name__ = optimizer_class.__name__ + "WithFP32MasterWeights"
    return FP32MasterWeights


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
opt = with_fp32_master_weights(torch.optim.Adam)(model.parameters(), lr=3e-3)
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
