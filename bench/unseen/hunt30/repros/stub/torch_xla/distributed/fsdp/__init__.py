import torch
from torch import nn


def _cast(x, dt):
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(dt)
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(v, dt) for v in x)
    if isinstance(x, dict):
        return {k: _cast(v, dt) for k, v in x.items()}
    return x


class XlaFullyShardedDataParallel(nn.Module):
    """CPU stand-in: one shard = the whole module. With compute_dtype, floating inputs are cast to it and the
    forward runs a functional call with the parameters cast (the real one gathers full params in compute_dtype)."""

    def __init__(self, module, compute_dtype=None, buffer_dtype=None, fp32_reduce_scatter=False, **kwargs):
        super().__init__()
        self.module = module
        self.compute_dtype = compute_dtype or torch.float32

    def forward(self, *args, **kwargs):
        if self.compute_dtype != torch.float32:
            args, kwargs = _cast(args, self.compute_dtype), _cast(kwargs, self.compute_dtype)
            params = {k: v.to(self.compute_dtype) if v.is_floating_point() else v
                      for k, v in self.module.named_parameters()}
            bufs = {k: v.to(self.compute_dtype) if v.is_floating_point() else v for k, v in self.module.named_buffers()}
            return torch.func.functional_call(self.module, {**params, **bufs}, args, kwargs)
        return self.module(*args, **kwargs)


FullyShardedDataParallel = XlaFullyShardedDataParallel


def _clip_grad_norm_(self, max_norm, norm_type=2.0):
    return torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm, norm_type)


XlaFullyShardedDataParallel.clip_grad_norm_ = _clip_grad_norm_
