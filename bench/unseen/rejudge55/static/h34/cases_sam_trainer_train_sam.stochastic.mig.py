"""Sharpness-aware minimisation (SAM, the optimizer-wrapper form) inside a small
Trainer class with gradient accumulation; evaluation correlates predictions on the host."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla
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


def host_float32(data, back_to_device=False):
    """Return `data` with every bf16 tensor in it copied to the host and made float32 there (and,
    with `back_to_device`, moved back to the device it was on); integer, float32 and float64
    tensors and everything else but modules are returned as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor that left the XLA device was float32): `data` is a tensor, or a list, tuple,
    namedtuple or dict of them (a state dict, a checkpoint), nested; containers are copied with
    their type, a state dict's metadata kept, so `load_state_dict` reads the result as before.
    `torch.save` writes an XLA tensor as one: `back_to_device=True` keeps it so, as the legacy
    checkpoint held it. A module is copied, its bf16 parameters and buffers made float32 where they
    are, without the input hooks bf16-migrate registered on it (functions of the migrated script,
    which a `torch.save`d module would need to be loaded anywhere else).
    """
    import copy

    if isinstance(data, torch.nn.Module):
        module = copy.deepcopy(data)
        for sub in module.modules():
            for key, hook in list(sub._forward_pre_hooks.items()):
                if getattr(hook, "__name__", None) in ("bf16_inputs_hook", "float32_inputs_hook"):
                    del sub._forward_pre_hooks[key]
                    sub._forward_pre_hooks_with_kwargs.pop(key, None)
        return module._apply(lambda t: t.float() if t.dtype == torch.bfloat16 else t)
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.bfloat16:
            return data
        host = data.cpu().float()
        return host.to(data.device) if back_to_device else host
    if isinstance(data, dict):
        out = copy.copy(data)
        for key, value in data.items():
            out[key] = host_float32(value, back_to_device)
        return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(host_float32(value, back_to_device) for value in data))
    if isinstance(data, (list, tuple)):
        return type(data)(host_float32(value, back_to_device) for value in data)
    return data


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        super().__init__(params, dict(rho=rho, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self):
        norms = [p.grad.norm(2) for g in self.param_groups for p in g["params"] if p.grad is not None]
        grad_norm = torch.stack(norms).norm(2)
        for g in self.param_groups:
            scale = g["rho"] / (grad_norm + 1e-12)
            for p in g["params"]:
                if p.grad is not None:
                    self.state[p]["e_w"] = p.grad * scale
                    p.add_(self.state[p]["e_w"])
        return grad_norm

    @torch.no_grad()
    def second_step(self):
        for g in self.param_groups:
            for p in g["params"]:
                if "e_w" in self.state[p]:
                    p.sub_(self.state[p]["e_w"])
        self.base_optimizer.step()


class Trainer:
    def __init__(self, model, accum=2):
        self.device = torch_xla.device()
        self.model = model.to(self.device)
        self.model.to(torch.bfloat16)
        self.model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
        self.opt = SAM(self.model.parameters(), torch.optim.SGD, rho=0.05, lr=0.05, momentum=0.9)
        self.accum = accum

    def _loss(self, xb, yb):
        return nn.functional.mse_loss(self.model(xb.to(self.device)).squeeze(-1), floating_to_bf16(yb.to(self.device)))

    def fit(self, batches):
        for step, chunk in enumerate(batches):
            for xb, yb in chunk:
                (self._loss(xb, yb) / self.accum).backward()
            gnorm = self.opt.first_step()
            self.opt.zero_grad()
            for xb, yb in chunk:
                loss = self._loss(xb, yb) / self.accum
                loss.backward()
            self.opt.second_step()
            self.opt.zero_grad()
            xm.mark_step()
            print(f"step {step} loss {loss.item() * self.accum:.4f} grad norm {gnorm.item():.3f}")

    @torch.no_grad()
    def evaluate(self, xv, yv):
        pred = host_float32(self.model(xv.to(self.device)).squeeze(-1).cpu())
        print("DTYPES pred", pred.dtype, "weight", self.model[0].weight.dtype)
        return float(np.corrcoef(pred, yv)[0, 1])


torch.manual_seed(0)
w = torch.randn(12)
def batch(n=32):
    x = torch.randn(n, 12)
    return x, torch.tanh(x @ w) + 0.05 * torch.randn(n)
trainer = Trainer(nn.Sequential(nn.Linear(12, 64), nn.GELU(), nn.Linear(64, 1)))
trainer.fit([[batch(), batch()] for _ in range(10)])
print(f"pearson r {trainer.evaluate(*batch(256)):.3f}")
