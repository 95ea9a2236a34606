"""stochastic-rounding: the legacy write becomes a write of ``NEURON_RT_STOCHASTIC_ROUNDING_EN = "1"``
in the same spelling, unless the file already names that variable (on Neuron the switch turned
stochastic rounding on: Neuron's migration guide from XLA_USE_BF16/XLA_DOWNCAST_BF16);
:func:`..write_edits.stochastic_rounding_writes`."""

from __future__ import annotations

from dataclasses import replace

from ...rules import Emit
from ..write_edits import stochastic_rounding_writes
from .migration import Migration, Planned

EMIT = Emit.STOCHASTIC_ROUNDING


def plan(m: Migration, planned: Planned) -> Planned:
    """The writes renamed; hands on their keys and their summary to the writes' own step."""
    renamed, summary = stochastic_rounding_writes(m.ctx, m.plan, m.guard, list(m.writes), m.summary)
    return replace(planned, renamed=renamed, writes_summary=summary)
