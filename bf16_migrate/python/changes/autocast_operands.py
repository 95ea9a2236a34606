"""autocast-operands: in amp, where the code that runs under autocast scatters, puts or
interpolates a source into a destination (``scatter_add``, ``masked_scatter``, ``t[index] = v``,
``lerp``), the source takes the destination's dtype: those ops neither promote nor convert, and
autocast makes some tensors bf16 and leaves others FP32 (:mod:`..autocast_operands`)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ...rules import Emit
from ..autocast_operands import find_source_operands, plan_source_operands
from ..device_modules import method_names
from ..loss_reach import loss_code
from ..model_reach import model_roots, reach_from
from .migration import Migration, Planned

EMIT = Emit.AUTOCAST_OPERANDS


def plan(m: Migration, planned: Planned) -> Planned:
    """``source.to(<destination>.dtype)`` at each such op of the models' code, the other modules on
    the device, the loss code and the autocast regions (BFM035)."""
    ctx = m.ctx
    if not find_source_operands(ctx, [ctx.module]):
        return planned  # most files have none: the reach of the model's code is not read for nothing
    calls = [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx)
    models = [*m.models, *m.on_device.exprs(ctx)]
    reached = reach_from(ctx, model_roots(ctx, models), [], loss_code(ctx, calls), method_names(ctx, models))
    scopes: list[cst.CSTNode] = [*reached.runtime, *_region_statements(m)]
    plan_source_operands(ctx, m.plan, find_source_operands(ctx, scopes))
    return planned


def _region_statements(m: Migration) -> Iterator[cst.BaseStatement]:
    """The statements the autocast regions wrap, first to last of each."""
    for block, first, last in m.regions:
        body = list(block.body)
        start = next(i for i, s in enumerate(body) if s is first)
        end = next(i for i, s in enumerate(body) if s is last)
        yield from body[start : end + 1]
