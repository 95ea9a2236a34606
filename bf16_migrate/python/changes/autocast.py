"""autocast: the forward pass and the loss go under ``torch.autocast("xla", dtype=torch.bfloat16)``
with the model kept FP32 (Neuron's migration guide: the automatic mixed precision replacement); the
regions were found, and the migration stopped where one could not be wrapped, before any change
(:func:`..autocast.autocast_regions`)."""

from __future__ import annotations

from ...rules import Emit
from ..autocast import plan_autocast
from .migration import Migration, Planned

EMIT = Emit.AUTOCAST


def plan(m: Migration, planned: Planned) -> Planned:
    """The regions wrapped, under the guard."""
    m.plan.wrap_guard = m.guard
    plan_autocast(m.plan, list(m.regions))
    return planned
