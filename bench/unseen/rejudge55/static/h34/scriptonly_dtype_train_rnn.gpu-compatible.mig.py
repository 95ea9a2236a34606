"""A hand-written Elman RNN that learns a running sum; every setting comes from a
dataclass turned into command-line flags, the tensor dtype included (as a string)."""
import argparse
from dataclasses import dataclass, fields

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


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


@dataclass
class Config:
    hidden: int = 32
    seq_len: int = 12
    batch: int = 16
    lr: float = 3e-3
    steps: int = 10
    dtype: str = "float32"


def parse() -> Config:
    p = argparse.ArgumentParser()
    for f in fields(Config):
        p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    return Config(**vars(p.parse_args()))


class ElmanRNN(nn.Module):
    def __init__(self, d_in, hidden, dtype):
        super().__init__()
        self.hidden, self.dtype = hidden, dtype
        self.wx = nn.Linear(d_in, hidden)
        self.wh = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = torch.zeros(x.shape[0], self.hidden, dtype=self.dtype, device=x.device)
        for t in range(x.shape[1]):
            h = torch.tanh(self.wx(x[:, t]) + self.wh(h))
        return self.out(h).squeeze(-1)


def main():
    cfg = parse()
    dtype = getattr(torch, cfg.dtype)
    torch.manual_seed(0)
    device = torch_xla.device()
    model = ElmanRNN(1, cfg.hidden, dtype).to(device)
    model.to(torch.bfloat16)
    opt = with_fp32_master_weights(torch.optim.RMSprop)(model.parameters(), lr=cfg.lr)
    for step in range(cfg.steps):
        x = torch.rand(cfg.batch, cfg.seq_len, 1, dtype=dtype) - 0.5
        y = x.sum(dim=(1, 2))
        x, y = x.to(device), y.to(device)
        loss = nn.functional.smooth_l1_loss(model(x.to(torch.bfloat16)), y.to(torch.bfloat16))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES config", cfg.dtype, "wx", model.wx.weight.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
