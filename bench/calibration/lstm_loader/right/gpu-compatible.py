"""An LSTM sequence classifier fed by a DataLoader through torch-xla's MpDeviceLoader, with
gradient clipping; bf16 switched on through os.environ.update in main()."""

import argparse
import os

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset


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


def clip_grad_norm_fp32_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """torch.nn.utils.clip_grad_norm_ with the gradient norm computed in FP32; returns it (FP32).

    Added by bf16-migrate (gpu-compatible mode, replacing the legacy bf16 environment switch):
    the model's gradients are bf16, and their norm computed in bf16 is about 1% off over a
    million elements. `foreach` is accepted for compatibility and not used.
    """
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    norm_type = float(norm_type)
    norms = [torch.linalg.vector_norm(g.detach().float(), norm_type) for g in grads]
    total_norm = torch.linalg.vector_norm(torch.stack([n.to(grads[0].device) for n in norms]), norm_type)
    if error_if_nonfinite and (torch.isnan(total_norm) or torch.isinf(total_norm)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be clipped.")
    clip_coef = torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(clip_coef.to(g.device))
    return total_norm


class SequenceClassifier(nn.Module):
    def __init__(self, inputs=5, hidden=32, classes=3):
        super().__init__()
        self.lstm = nn.LSTM(inputs, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, seq):
        out, _ = self.lstm(seq)
        return self.head(out.mean(dim=1))


def sequences(n, length, gen):
    """Class 0: rising, 1: falling, 2: oscillating, on five noisy channels."""
    labels = torch.randint(0, 3, (n,), generator=gen)
    t = torch.linspace(0, 1, length).view(1, length, 1)
    shape = torch.where(labels.view(n, 1, 1) == 0, t, torch.where(labels.view(n, 1, 1) == 1, 1 - t, torch.sin(12 * t)))
    return shape + 0.3 * torch.randn(n, length, 5, generator=gen), labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    x, y = sequences(2048, 20, torch.Generator().manual_seed(8))
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, drop_last=True)
    model = SequenceClassifier().to(device)
    model.to(torch.bfloat16)
    optimizer = with_fp32_master_weights(torch.optim.RMSprop)(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    while step < args.steps:
        for seq, labels in pl.MpDeviceLoader(loader, device):
            optimizer.zero_grad()
            loss = loss_fn(model(seq.to(torch.bfloat16)), labels)
            loss.backward()
            clip_grad_norm_fp32_(model.parameters(), 1.0)
            xm.optimizer_step(optimizer)
            step += 1
            if step == args.steps:
                break


if __name__ == "__main__":
    main()
