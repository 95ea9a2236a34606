"""What a verify check is (:mod:`.checks` registers them and asks them): the :class:`Check`
protocol, which a check module satisfies, and the :class:`CheckInput` it is given. No torch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .compare import Verdict
from .parts import Part
from .records import RunRecord
from .trace_findings import TraceFinding
from .unseen import Unseen

__all__ = ["Check", "CheckInput"]


@dataclass(frozen=True)
class CheckInput:
    """What a check is given. ``verdict``: the verdict so far (its ``mode``, the judge's parts,
    which a check may read, and its ``notes``, to which a check may add a line: e.g. why it gives
    no part). ``runs``: this round's run records by name (``"legacy"``, ``"migrated"``,
    ``"reference"``, ``"control"``; any may be missing or failed). ``findings``: the dtype trace's
    findings (:func:`.trace_findings.trace_findings`), empty without a trace. ``traced_runs``: the
    runs the trace was recorded in (the first round's: a second round of more steps is not traced
    again). ``trace_asked``: whether this round's runs were asked to record the trace. ``unseen``: the
    migration's changed statements the traced migrated run never executed (:func:`.unseen.unseen_changes`)."""

    verdict: Verdict
    runs: Mapping[str, RunRecord]
    findings: Sequence[TraceFinding] = ()
    traced_runs: Mapping[str, RunRecord] | None = None
    trace_asked: bool = False
    unseen: Sequence[Unseen] = ()

    @property
    def traced(self) -> Mapping[str, RunRecord]:
        """The runs the trace was recorded in (``runs`` when not given apart)."""
        return self.runs if self.traced_runs is None else self.traced_runs


class Check(Protocol):
    """What a check module provides (each of :data:`REGISTRY`'s modules is one; mypy checks it).

    ``NAME``: its part's name (the report's and the ``--json`` document's word; one line of
    :data:`REGISTRY`). ``check(given)`` judges the :class:`CheckInput` and returns its
    :class:`~.parts.Part` (PASS, FAIL or INCONCLUSIVE: a FAIL fails the verdict, an INCONCLUSIVE
    leaves it undecided), or None when it has nothing to judge (the part is then left out). It
    never raises for bad runs: it says so in its part, or gives none."""

    NAME: str

    def check(self, given: CheckInput) -> Part | None: ...
