"""Plain-text and JSON renderings of a :class:`~bf16_migrate.verify.result.VerifyReport`."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from ..console import display_path
from .compare import Tolerance
from .parts import Status
from .records import AUTOCAST, CONTROL, LEGACY, MIGRATED, REFERENCE
from .result import VerifyReport

__all__ = ["format_report", "report_dict", "error_dict", "SCHEMA", "STOCHASTIC_ROUNDING_NOTE", "NEURON_ROUNDING_NOTE"]

SCHEMA = "bf16-migrate/verify/2"
"""Value of the ``schema`` key of ``--json`` output; bumped when a key changes meaning or goes."""

NEURON_ROUNDING_NOTE = (
    "PJRT_DEVICE=NEURON: stochastic rounding is on in both runs (the legacy switch turned "
    "NEURON_RT_STOCHASTIC_ROUNDING_EN on, the migrated script sets it), so the steps are not expected to be "
    "bit-identical: the onset check is skipped and only the drift bound judges the match."
)

STOCHASTIC_ROUNDING_NOTE = (
    "Stochastic rounding exists only on Neuron hardware (NEURON_RT_STOCHASTIC_ROUNDING_EN, which the legacy "
    "variables also switched on there); the CPU rounds to nearest in both runs, so this comparison shows that the "
    "precision and the computation are the same, not the effect of stochastic rounding."
)

_COLUMNS = (
    (LEGACY, "legacy"),
    (MIGRATED, "migrated"),
    (REFERENCE, "fp32-ref"),
    (CONTROL, "bf16-ctl"),
    (AUTOCAST, "autocast-ctl"),
)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.6g}"


def _rel(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.2e}"


def format_report(report: VerifyReport) -> str:
    """The report as plain text: a header, one row per step (step | legacy | migrated |
    fp32-ref | rel. diff of migrated against the comparison run), the verdict parts with their
    figures, timings, notes, and a closing ``VERDICT: PASS`` or ``VERDICT: FAIL`` line."""
    lines = _header_lines(report)
    lines.extend(_loss_table(report))
    lines.append("")
    lines.extend(_part_lines(report))
    lines.append("")
    lines.extend(_run_lines(report))
    evidence = _evidence_table(report)
    if evidence:
        lines.append("")
        lines.extend(evidence)
    lines.extend(_closing_lines(report))
    lines.append("")
    status = report.verdict.status
    lines.append(f"VERDICT: {status}" + (" (could not decide: exit 3)" if status == Status.INCONCLUSIVE else ""))
    return "\n".join(lines) + "\n"


def _header_lines(report: VerifyReport) -> list[str]:
    """What was verified: script, mode, steps, arguments, device, legacy version and setting."""
    args = " ".join(report.script_args)
    lines = [
        f"bf16-migrate verify {report.script} (mode {report.mode}, {report.steps} steps"
        + (f", script args: {args}" if args else "")
        + f", PJRT_DEVICE={report.device})"
    ]
    if report.legacy_label:
        lines.append(f"legacy version: {report.legacy_label}; migrated version: the work tree")
    if report.legacy_env:
        source = f" (from {', '.join(report.legacy_env_source)})" if report.legacy_env_source else ""
        lines.append(f"legacy run under {_env_text(report.legacy_env)}{source}")
    return lines


def _loss_table(report: VerifyReport) -> list[str]:
    """One row per step: the loss of each run and the relative difference of the migrated one
    against the comparison run (a blank line first; nothing when no run has a step)."""
    v = report.verdict
    present = [(name, title) for name, title in _COLUMNS if name in report.runs]
    base_title = {LEGACY: "legacy", REFERENCE: "fp32-ref"}.get(v.baseline or "", "-")
    header = ["step", *[t for _n, t in present], f"rel. diff vs {base_title}"]
    rows = []
    n = max((r.steps for r in report.runs.values()), default=0)
    for i in range(n):
        row = [str(i + 1)]
        for name, _t in present:
            losses = report.runs[name].losses
            row.append(_num(losses[i]) if i < len(losses) else "-")
        row.append(_rel(v.rel[i]) if i < len(v.rel) else "-")
        rows.append(row)
    if not rows:
        return []
    widths = [max(len(header[c]), *(len(r[c]) for r in rows)) for c in range(len(header))]
    lines = ["", " | ".join(h.rjust(w) for h, w in zip(header, widths)), "-+-".join("-" * w for w in widths)]
    lines.extend(" | ".join(c.rjust(w) for c, w in zip(cells, widths)) for cells in rows)
    return lines


def _part_lines(report: VerifyReport) -> list[str]:
    """The verdict's parts, one figure per line, and the tolerances' source under matches."""
    v = report.verdict
    lines = []
    indent = " " * 24
    for part in v.parts:
        pieces = part.detail.split("; ")
        lines.append(f"{part.name:<10} {part.status:<12} {pieces[0]}")
        lines.extend(indent + piece for piece in pieces[1:])
        if part.name == "matches" and v.tolerance is not None:
            lines.extend(indent + line for line in tolerance_words(v.tolerance))
    return lines


TOLERANCES_DOC = 'docs/verify.md, "Verdict and tolerances"'
"""Where a user reads what the limits of matches are and how they were measured."""


def tolerance_words(tolerance: Tolerance, width: int = 76) -> list[str]:
    """The lines under matches' figures that say, in words, what they compare and where the
    limits come from (the mode's, measured on scripts with known right and wrong migrations:
    :data:`TOLERANCES_DOC`; or measured in this verify, the fallback's own words), each at most
    ``width`` characters but a long word."""
    against = "the FP32 reference run's" if tolerance.baseline == REFERENCE else "the legacy run's"
    what = f"(rel. diff: how far the migrated run's loss is from {against} at the same step, as a fraction of it;"
    if tolerance.measured_here:
        limits = f" the limits were measured in this verify: {tolerance.source})"
    else:
        limits = f" the limits and the scripts they were measured on: {TOLERANCES_DOC})"
    return textwrap.wrap(what + limits, width=width, subsequent_indent=" ")


def _run_lines(report: VerifyReport) -> list[str]:
    """One line per run: wall time, median step time, compilations, device parameter dtypes;
    a failed run's error and the last lines of its output instead."""
    lines = []
    for name, title in _COLUMNS:
        r = report.runs.get(name)
        if r is None:
            continue
        if r.error:
            lines.append(f"{title:<9} FAILED: {r.error}")
            for t in r.tail[-5:]:
                lines.append(f"{'':<10}| {t}")
            continue
        step = r.median_step_time_s
        bits = [f"{r.wall_time_s:.1f} s wall" if r.wall_time_s is not None else None]
        bits.append(f"median step {step * 1e3:.1f} ms" if step is not None else None)
        if r.compile_count is not None:
            bits.append(f"{r.compile_count} XLA compilations")
        if r.device_param_dtypes:
            bits.append("device params " + ", ".join(f"{k} x{c}" for k, c in sorted(r.device_param_dtypes.items())))
        lines.append(f"{title:<9} " + ", ".join(b for b in bits if b))
    return lines


def trace_lines(findings: Sequence[Any]) -> list[str]:
    """The dtype trace's findings (:class:`~bf16_migrate.verify.trace_findings.TraceFinding`):
    ``path:line:col: CODE message`` each (the user's file, relative to the current directory when
    under it), its evidence indented below; an excused one says which island excuses it."""
    lines = []
    for f in findings:
        d = f.diagnostic
        mark = "" if f.counts else f" [kept: deliberate f32 island, {f.excused.code} at line {f.excused.line}]"
        fixed = " [fixed]" if d.fixed else ""
        lines.append(f"  {display_path(d.path)}:{d.line}:{d.col}: {d.code} {d.message}{mark}{fixed}")
        lines.extend(f"      {line}" for line in f.evidence)
    return lines


def _closing_lines(report: VerifyReport) -> list[str]:
    """The dtype trace's findings, the findings the migration did not fix, and the notes (the
    verdict's and the mode's)."""
    lines = []
    if report.trace_findings:
        lines.append("")
        lines.append("The run's dtype trace (what the migrated run did that the legacy run did not, by line):")
        lines.extend(trace_lines(report.trace_findings))
    unfixed = [d for d in report.diagnostics if not getattr(d, "fixed", True)]
    if unfixed:
        lines.append("")
        lines.append("Findings the migration did not fix (the migrated run keeps them):")
        for d in unfixed:
            lines.append(f"  {report.script.name}:{d.line}:{d.col}: {d.code} {d.message}")
    notes = list(report.verdict.notes)
    if report.mode.stochastic_rounding:
        notes.append(NEURON_ROUNDING_NOTE if report.device.upper() == "NEURON" else STOCHASTIC_ROUNDING_NOTE)
    if report.mode.autocast:
        notes.append("amp is compared with the FP32 reference run (the legacy run is shown for information).")
    if notes:
        lines.append("")
        for note in notes:
            lines.extend(textwrap.wrap(f"Note: {note}", width=100, subsequent_indent="      "))
    return lines


def _env_text(env: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(env.items())) or "-"


def _counts(d: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k} x{v}" for k, v in sorted(d.items())) if d else "-"


def _evidence_table(report: VerifyReport) -> list[str]:
    """One row per run that recorded something: what its executed training-step graph computes
    and what the device holds (see :class:`~bf16_migrate.verify.graphs.GraphStats`)."""
    header = [
        "run",
        "step graph",
        "matmuls bf16",
        "converts up/down",
        "round trips layout/elementwise",
        "compiles",
        "device params",
        "optimizer state",
    ]
    rows = []
    for name, title in _COLUMNS:
        r = report.runs.get(name)
        if r is None or not r.steps:
            continue
        g = r.graph
        state: dict[str, int] = {}
        for per in (r.state_dtypes or {}).values():
            for key, n in per.items():
                if "/" in key:
                    dev = key.split("/", 1)[1]
                    state[dev] = state.get(dev, 0) + n
        rows.append(
            [
                title,
                f"step {g.step}" if g is not None and g.step else "-",
                f"{g.matmuls_bf16} of {g.matmuls}" if g is not None else "-",
                f"{g.converts.get('bf16->f32', 0)} / {g.converts.get('f32->bf16', 0)}" if g is not None else "-",
                f"{g.round_trips.get('bf16->f32->bf16 (layout)', 0)} / {g.round_trip_count('elementwise')}"
                if g is not None
                else "-",
                str(r.compile_count) if r.compile_count is not None else "-",
                _counts(r.device_param_dtypes),
                _counts(state),
            ]
        )
    if not rows or all(row[1] == "-" and row[5] == "-" for row in rows):
        return []
    widths = [max(len(header[c]), *(len(row[c]) for row in rows)) for c in range(len(header))]
    out = ["Evidence (executed training-step graph, f32<->bf16 converts of tensors, device dtypes):"]
    out.append(" | ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    out.append("-+-".join("-" * w for w in widths))
    for row in rows:
        out.append(" | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return out


def _clean(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _clean(val) for k, val in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(val) for val in x]
    return x


def report_dict(report: VerifyReport) -> dict[str, Any]:
    """The report as a JSON-ready dict (for ``--json``; schema :data:`SCHEMA`, documented in
    docs/verify.md); NaN/Inf become the strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    v = report.verdict
    tol = v.tolerance
    return _clean(
        {
            "schema": SCHEMA,
            "script": str(report.script),
            "mode": report.mode.name,
            "steps": report.steps,
            "script_args": list(report.script_args),
            "device": report.device,
            "legacy_version": report.legacy_label,
            "legacy_env": dict(report.legacy_env),
            "legacy_env_source": list(report.legacy_env_source),
            "passed": report.passed,
            "verdict": v.status,
            "rounds": list(report.rounds),
            "baseline": v.baseline,
            "fallback": v.fallback,
            "tolerance": None
            if tol is None
            else {
                "baseline": tol.baseline,
                "onset_kind": tol.onset_kind,
                "onset_steps": tol.onset_steps,
                "onset_tol": tol.onset_tol,
                "onset_min": tol.onset_min,
                "drift_factor": tol.drift_factor,
                "drift_floor": tol.drift_floor,
                "drift_no_gap": tol.drift_no_gap,
                "source": tol.source,
            },
            "parts": [{"name": p.name, "status": p.status, "detail": p.detail, "figures": p.figures} for p in v.parts],
            "rel_diff": v.rel,
            "notes": v.notes,
            "runs": {name: r.to_dict() for name, r in report.runs.items()},
            "wall_time_s": report.wall_time_s,
            "diagnostics": [
                {"code": d.code, "path": d.path, "line": d.line, "col": d.col, "message": d.message, "fixed": d.fixed}
                for d in report.diagnostics
            ],
            "trace_findings": [f.to_dict() for f in report.trace_findings],
        }
    )


def error_dict(error: Any) -> dict[str, Any]:
    """A :class:`~bf16_migrate.verify.records.RunError` as the ``error`` object of the
    ``--json`` output when no verdict could be made (exit 2)."""
    return _clean(error.to_dict())
