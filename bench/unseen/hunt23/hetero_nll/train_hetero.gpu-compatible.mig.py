"""Heteroscedastic regression: an MLP predicts a mean and a log-variance per output, trained with a
hand-written Gaussian NLL (plus F.gaussian_nll_loss logged as a check), gradient clipping whose returned
norm is logged with .item(), and a linear LR warmup computed in Python. At the end the predictive
intervals are evaluated on the host."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


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


STEPS = 10
WARMUP = 4
BASE_LR = 4e-3
OUT = 2


class MeanVar(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(3, 48), nn.SiLU(), nn.Linear(48, 48), nn.SiLU())
        self.mu = nn.Linear(48, OUT)
        self.logvar = nn.Linear(48, OUT)

    def forward(self, x):
        h = self.trunk(x)
        return self.mu(h), self.logvar(h).clamp(-6.0, 4.0)


def nll(mu, logvar, y):
    inv = torch.exp(-logvar)
    return 0.5 * (logvar + (y - mu) ** 2 * inv).mean()


def sample(rng, n):
    x = rng.uniform(-2, 2, size=(n, 3)).astype(np.float32)
    noise = (0.1 + 0.4 * np.abs(x[:, :1])) * rng.standard_normal((n, OUT)).astype(np.float32)
    y = np.stack([np.sin(x[:, 0]) + 0.5 * x[:, 1], x[:, 2] ** 2 - 0.3 * x[:, 0]], 1) + noise
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


def lr_at(step):
    return BASE_LR * min(1.0, (step + 1) / WARMUP)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = MeanVar().to(dev)
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = with_fp32_master_weights(torch.optim.Adam)(model.parameters(), lr=BASE_LR)
    history = []
    for step in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = sample(rng, 64)
        x, y = x.to(dev), y.to(dev)
        mu, logvar = model(x)
        loss = nll(mu, logvar, floating_to_bf16(y))
        with torch.no_grad():
            ref = F.gaussian_nll_loss(mu, y, logvar.exp(), full=False)
        opt.zero_grad()
        loss.backward()
        gnorm = clip_grad_norm_fp32_(model.parameters(), max_norm=1.0)
        opt.step()
        xm.mark_step()
        history.append((step, loss.item(), ref.item(), gnorm.item()))
    for h in history[::3]:
        print("step %d nll %.4f ref %.4f gnorm %.3f" % h)

    x, y = sample(rng, 128)
    with torch.no_grad():
        mu, logvar = model(x.to(dev))
        sigma = torch.exp(0.5 * logvar)
    lo = (mu - 1.96 * sigma).cpu().float().numpy()
    hi = (mu + 1.96 * sigma).cpu().float().numpy()
    cover = ((y.numpy() >= lo) & (y.numpy() <= hi)).mean(0)
    print("95% interval coverage per output", np.round(cover, 3), lo.dtype)


if __name__ == "__main__":
    main()
