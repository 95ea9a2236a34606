"""zero1-bf16-state: torch-xla's ``ZeroRedundancyOptimizer`` keeps its master weights and state in
``optimizer_dtype``, ``torch.float32`` when not given
(``torch_xla/distributed/zero_redundancy_optimizer.py``); under the legacy switch that f32 was bf16
on the device, so stochastic mode adds ``optimizer_dtype=torch.bfloat16`` (BFM066,
:func:`..optimizers.zero1_bf16_state`)."""

from __future__ import annotations

from ...rules import Emit
from ..optimizers import zero1_bf16_state
from .migration import Migration, Planned

EMIT = Emit.ZERO1_BF16_STATE


def plan(m: Migration, planned: Planned) -> Planned:
    """``optimizer_dtype=torch.bfloat16`` on each ZeRO-1 optimizer, under the guard."""
    zero1_bf16_state(m.ctx, m.plan, m.guard, list(m.sites))
    return planned
