"""The verdict's ``trace`` part, a check of :data:`.checks.REGISTRY`: the places where the
migrated run does what the legacy run did not, from the dtype trace (:func:`.trace_findings.trace_part`;
docs/verify.md, "The run's dtype trace")."""

from __future__ import annotations

from .check import CheckInput
from .parts import Part
from .records import MIGRATED
from .trace_findings import trace_part

NAME = "trace"


def check(given: CheckInput) -> Part | None:
    """FAIL when a finding of the trace counts, else PASS (:func:`.trace_findings.trace_part`, over
    the runs the trace was recorded in); None when the migrated run has no trace. When this
    round's runs were asked for a trace and the migrated run has none, the verdict's notes say the
    verdict stands without it, and why (the harness's errors)."""
    part = trace_part(given.findings, given.traced)
    if part is None and given.trace_asked and MIGRATED in given.runs:
        unrecorded = "; ".join(given.runs[MIGRATED].harness_errors) or "no trace was written"
        given.verdict.notes.append(
            f"The migrated run's dtype trace could not be recorded ({unrecorded}): no trace part."
        )
    return part
