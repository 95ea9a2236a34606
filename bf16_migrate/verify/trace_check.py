"""The verdict's ``trace`` part, a check of :data:`.checks.REGISTRY`: the places where the
migrated run does what the legacy run did not, from the dtype trace (:func:`.trace_findings.trace_part`;
docs/verify.md, "The run's dtype trace")."""

from __future__ import annotations

from .check import CheckInput
from .parts import INCONCLUSIVE, Part
from .records import MIGRATED
from .trace import TraceEnd
from .trace_findings import trace_part
from .unseen import unseen_note

NAME = "trace"


def check(given: CheckInput) -> Part | None:
    """FAIL when a finding of the trace counts, else PASS (:func:`.trace_findings.trace_part`, over
    the runs the trace was recorded in); None when the migrated run has no trace. The migration's changes the
    traced run never executed are named in the part and the verdict's notes (:mod:`.unseen`), and a PASS is
    INCONCLUSIVE when the trace's time ran out before them. When this
    round's runs were asked for a trace and the migrated run has none, the verdict's notes say the
    verdict stands without it, and why (the harness's errors)."""
    part = trace_part(given.findings, given.traced)
    trace = given.traced[MIGRATED].trace if MIGRATED in given.traced else None
    if part is not None and given.unseen and trace is not None:
        note = unseen_note(list(given.unseen), trace.end)
        part.detail += "; " + note
        part.figures["unseen"] = [f"{u.path}:{u.line}" for u in given.unseen]
        given.verdict.notes.append(note[0].upper() + note[1:] + ": the verdict says nothing about them.")
        if part.passed and trace.end in (TraceEnd.BUDGET, TraceEnd.DEADLINE):
            # the trace's time ran out before code the migration changed: nothing proved it (a wrong dtype in a
            # phase after a long warm-up PASSed); a trace stopped at the recorded steps on request (--trace-time
            # 0) or a script that ended without them (a path these arguments do not take) is only said
            part.status = INCONCLUSIVE
    if part is None and given.trace_asked and MIGRATED in given.runs:
        unrecorded = "; ".join(given.runs[MIGRATED].harness_errors) or "no trace was written"
        given.verdict.notes.append(
            f"The migrated run's dtype trace could not be recorded ({unrecorded}): no trace part."
        )
    return part
