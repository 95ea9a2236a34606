"""Plain-text and JSON renderings of a :class:`~bf16_migrate.verify.VerifyReport`."""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any

from .records import LEGACY, MIGRATED, REFERENCE

if TYPE_CHECKING:  # pragma: no cover
    from . import VerifyReport

__all__ = ["format_report", "report_dict", "STOCHASTIC_ROUNDING_NOTE"]

STOCHASTIC_ROUNDING_NOTE = (
    "Stochastic rounding exists only on Neuron hardware (NEURON_RT_STOCHASTIC_ROUNDING_EN, which the legacy "
    "variables also switched on there); the CPU rounds to nearest in both runs, so this comparison shows that the "
    "precision and the computation are the same, not the effect of stochastic rounding."
)

_COLUMNS = ((LEGACY, "legacy"), (MIGRATED, "migrated"), (REFERENCE, "fp32-ref"))


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


def format_report(report: "VerifyReport") -> str:
    """The report as plain text: a header, one row per step (step | legacy | migrated |
    fp32-ref | rel. diff of migrated against the comparison run), the verdict parts with their
    figures, timings, notes, and a closing ``VERDICT: PASS`` or ``VERDICT: FAIL`` line."""
    v = report.verdict
    lines: list[str] = []
    args = " ".join(report.script_args)
    lines.append(
        f"bf16-migrate verify {report.script} (mode {report.mode}, {report.steps} steps"
        + (f", script args: {args}" if args else "")
        + f", PJRT_DEVICE={report.device})"
    )
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
    if rows:
        widths = [max(len(header[c]), *(len(r[c]) for r in rows)) for c in range(len(header))]
        lines.append("")
        lines.append(" | ".join(h.rjust(w) for h, w in zip(header, widths)))
        lines.append("-+-".join("-" * w for w in widths))
        for r in rows:
            lines.append(" | ".join(c.rjust(w) for c, w in zip(r, widths)))
    lines.append("")
    indent = " " * 24
    for part in v.parts:
        pieces = part.detail.split("; ")
        lines.append(f"{part.name:<10} {part.status:<12} {pieces[0]}")
        lines.extend(indent + piece for piece in pieces[1:])
    if v.tolerance is not None:
        lines.append(f"{indent}(tolerances: {v.tolerance.source})")
    lines.append("")
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
    unfixed = [d for d in report.diagnostics if not getattr(d, "fixed", True)]
    if unfixed:
        lines.append("")
        lines.append("Findings the migration did not fix (the migrated run keeps them):")
        for d in unfixed:
            lines.append(f"  {report.script.name}:{d.line}:{d.col}: {d.code} {d.message}")
    notes = list(v.notes)
    if report.mode == "stochastic":
        notes.append(STOCHASTIC_ROUNDING_NOTE)
    if report.mode == "amp":
        notes.append("amp is compared with the FP32 reference run (the legacy run is shown for information).")
    if notes:
        lines.append("")
        for note in notes:
            lines.extend(textwrap.wrap(f"Note: {note}", width=100, subsequent_indent="      "))
    lines.append("")
    lines.append(f"VERDICT: {'PASS' if report.passed else 'FAIL'}")
    return "\n".join(lines) + "\n"


def report_dict(report: "VerifyReport") -> dict[str, Any]:
    """The report as a JSON-ready dict (for ``--json``); NaN/Inf become strings."""

    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return str(x)
        if isinstance(x, dict):
            return {k: clean(val) for k, val in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(val) for val in x]
        return x

    v = report.verdict
    return clean(
        {
            "script": str(report.script),
            "mode": report.mode,
            "steps": report.steps,
            "script_args": list(report.script_args),
            "device": report.device,
            "passed": report.passed,
            "baseline": v.baseline,
            "fallback": v.fallback,
            "parts": [{"name": p.name, "status": p.status, "detail": p.detail, "figures": p.figures} for p in v.parts],
            "rel_diff": v.rel,
            "notes": v.notes,
            "runs": {name: r.to_dict() for name, r in report.runs.items()},
            "wall_time_s": report.wall_time_s,
            "diagnostics": [
                {"code": d.code, "line": d.line, "col": d.col, "message": d.message, "fixed": d.fixed}
                for d in report.diagnostics
            ],
        }
    )
