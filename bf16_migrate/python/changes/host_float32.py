"""host-float32: where a floating tensor leaves the device for the host (a copy, a checkpoint, a
reduction, a logging call), the host gets the float32 the legacy run handed it (torch-xla reports
the logical dtype: ``.cpu()`` of a switched tensor returns float32), measured per exit in
``rules/host_exits.toml`` (:mod:`..host_exits`)."""

from __future__ import annotations

from ...rules import Emit
from ..host_exits import plan_host_exits
from .migration import Migration, Planned

EMIT = Emit.HOST_FLOAT32


def plan(m: Migration, planned: Planned) -> Planned:
    """The host exits of the file cast back to float32."""
    plan_host_exits(m.ctx, m.plan, m.mode, m.flow, list(m.models), f64_was_f32=m.f64_was_f32)
    return planned
