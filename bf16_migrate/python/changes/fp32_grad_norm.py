"""fp32-grad-norm: ``torch.nn.utils.clip_grad_norm_`` (``rules/torch_api.toml``
``grad_norm_clipping``) becomes ``clip_grad_norm_fp32_`` (:mod:`..snippets`), the same clipping with
the norm of the bf16 gradients computed in FP32: gpu-compatible mode keeps the bf16 model's updates
in FP32 (Neuron's migration guide, "FP32 master weights"; :mod:`..optimizers`)."""

from __future__ import annotations

from ...rules import Emit
from ..optimizers import plan_fp32_grad_norm
from .migration import Migration, Planned

EMIT = Emit.FP32_GRAD_NORM


def plan(m: Migration, planned: Planned) -> Planned:
    """Each gradient clipping with its norm in FP32, under the guard."""
    plan_fp32_grad_norm(m.ctx, m.plan, m.guard)
    return planned
