"""One table, one JSON document and one exit code for a verify of several scripts or settings
(``bf16-migrate verify --against REV``, a launcher, ``PATHS --verify``) and for ``--merge`` of
``--json`` files written by separate runs (a CI matrix built from ``--list``).

:func:`summary_table` and :func:`tree_dict` read the :class:`~.tree.Outcome` of each job;
:func:`merge_documents` reads reports (schema :data:`~.report.SCHEMA`), error documents and
tree documents (:data:`TREE_SCHEMA`); :func:`exit_code` is the same for both (:data:`EXIT_CODES`):
2 when a verify could not be made, else 1 when one failed, else 3 when one could not decide,
else 0; 4 when nothing was verified.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .parts import Status
from .report import SCHEMA, error_dict, report_dict

if TYPE_CHECKING:
    from .jobs import Outcome

__all__ = [
    "TREE_SCHEMA",
    "EXIT_PASS",
    "EXIT_FAIL",
    "EXIT_ERROR",
    "EXIT_UNDECIDED",
    "EXIT_NOTHING",
    "EXIT_CODES",
    "Row",
    "exit_code",
    "summary_table",
    "tree_dict",
    "merge_documents",
]

TREE_SCHEMA = "bf16-migrate/verify-tree/1"
"""``schema`` of the ``--json`` document of a verify of several scripts (or settings)."""

EXIT_PASS, EXIT_FAIL, EXIT_ERROR, EXIT_UNDECIDED, EXIT_NOTHING = 0, 1, 2, 3, 4
EXIT_CODES = {
    Status.PASS: EXIT_PASS,
    Status.FAIL: EXIT_FAIL,
    Status.ERROR: EXIT_ERROR,
    Status.INCONCLUSIVE: EXIT_UNDECIDED,
}
"""verify's exit code per verdict (README, "Verify"): 0 the migrated run trains and matches; 1
it does not; 2 a run could not be made; 3 the runs could not tell the precisions apart within the
budget of extra steps (INCONCLUSIVE: what to run is said); 4 nothing was verified (no comparison
was run: nothing migrated since the revision, or every launch was left out)."""


def _env_text(env: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(env.items())) or "-"


@dataclass
class Row:
    """One line of the summary: from an :class:`Outcome` or from a JSON document."""

    script: str
    setting: str
    mode: str
    steps: str
    status: Status
    detail: str
    wall: float | None


def _row_from_outcome(outcome: Outcome) -> Row:
    job = outcome.job
    setting = _env_text(job.legacy_env) if job.legacy_env else "(its own writes)"
    if job.legacy_env and job.source:
        setting += f" ({', '.join(job.source)})"
    if outcome.report is not None:
        return _row_from_report(report_dict(outcome.report), job.rel, setting)
    err = outcome.error
    message = err.message if err is not None else "not run"
    return Row(job.rel, setting, job.mode.name, "-", outcome.status, message.splitlines()[0], None)


def _status(word: object) -> Status | None:
    """The :class:`Status` a ``--json`` document names (None for none or a word verify does not write)."""
    try:
        return Status(word) if word else None
    except ValueError:
        return None


def _row_from_report(data: Mapping[str, Any], script: str | None = None, setting: str | None = None) -> Row:
    if setting is None:
        env = data.get("legacy_env") or {}
        setting = _env_text(env) if env else "(its own writes)"
        if env and data.get("legacy_env_source"):
            setting += f" ({', '.join(data['legacy_env_source'])})"
    failed = [p["name"] for p in data.get("parts", []) if p.get("status") == "FAIL"]
    undecided = [p["name"] for p in data.get("parts", []) if p.get("status") == "INCONCLUSIVE"]
    detail = "; ".join(
        text
        for text in (
            ("failed: " + ", ".join(failed)) if failed else "",
            ("could not decide: " + ", ".join(undecided)) if undecided else "",
        )
        if text
    )
    status = _status(data.get("verdict")) or (Status.PASS if data.get("passed") else Status.FAIL)
    runs = data.get("runs") or {}
    steps = (runs.get("migrated") or {}).get("steps")
    return Row(
        script or str(data.get("script") or "?"),
        setting,
        str(data.get("mode") or "-"),
        str(steps) if steps is not None else "-",
        status,
        detail,
        data.get("wall_time_s"),
    )


def _rows_from_document(data: Mapping[str, Any], name: str) -> list[Row]:
    """Rows of one ``--json`` document: a tree document, a report, or an error document."""
    schema = data.get("schema")
    if schema == TREE_SCHEMA:
        rows = []
        for item in data.get("results", []):
            if item.get("report") is not None:
                rows.append(_row_from_report(item["report"], item.get("script") or None))
            else:
                env = item.get("legacy_env") or {}
                err = item.get("error") or {}
                rows.append(
                    Row(
                        str(item.get("script") or "?"),
                        _env_text(env) if env else "(its own writes)",
                        str(item.get("mode") or "-"),
                        "-",
                        Status.FAIL if err.get("broke") else Status.ERROR,
                        str(err.get("message", "not run")).splitlines()[0],
                        None,
                    )
                )
        return rows
    if schema == SCHEMA:
        if "error" in data and "parts" not in data:
            err = data.get("error") or {}
            return [
                Row(
                    str(data.get("script") or name),
                    "-",
                    str(data.get("mode") or "-"),
                    "-",
                    Status.FAIL if err.get("broke") else Status.ERROR,
                    str(err.get("message", "")).splitlines()[0] if err.get("message") else "",
                    None,
                )
            ]
        return [_row_from_report(data)]
    raise ValueError(f"{name}: not a bf16-migrate verify --json document (schema {schema!r})")


def exit_code(statuses: Iterable[Status]) -> int:
    """The exit code of several verifies (statuses ``PASS``, ``FAIL``, ``INCONCLUSIVE``,
    ``ERROR``): the code of the worst of them, ERROR before FAIL before INCONCLUSIVE before
    PASS (:data:`EXIT_CODES`); :data:`EXIT_NOTHING` when there is none."""
    statuses = list(statuses)
    if not statuses:
        return EXIT_NOTHING
    for worst in (Status.ERROR, Status.FAIL, Status.INCONCLUSIVE):
        if worst in statuses:
            return EXIT_CODES[worst]
    return EXIT_PASS


def _table(rows: Sequence[Row], title: str, notes: Sequence[str] = ()) -> str:
    header = ["script", "legacy setting (from)", "mode", "steps", "verdict", "wall", "detail"]
    body = [
        [r.script, r.setting, r.mode, r.steps, r.status, f"{r.wall:.1f} s" if r.wall is not None else "-", r.detail]
        for r in rows
    ]
    lines = [title]
    if body:
        widths = [max(len(header[c]), *(len(b[c]) for b in body)) for c in range(len(header))]
        lines.append("")
        lines.append(" | ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
        lines.append("-+-".join("-" * w for w in widths))
        for b in body:
            lines.append(" | ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip())
    if notes:
        lines.append("")
        lines.extend(f"Note: {n}" for n in notes)
    counts = {str(s): sum(1 for r in rows if r.status == s) for s in Status}
    by_code = {code: status for status, code in EXIT_CODES.items()}
    verdict = by_code[exit_code(r.status for r in rows)] if rows else "NOTHING VERIFIED"
    undecided = f", {counts['INCONCLUSIVE']} could not decide" if counts["INCONCLUSIVE"] else ""
    lines.append("")
    lines.append(
        f"VERDICT: {verdict} ({counts['PASS']} passed, {counts['FAIL']} failed{undecided}, {counts['ERROR']} could "
        "not be made)"
    )
    return "\n".join(lines) + "\n"


def summary_table(outcomes: Sequence[Outcome], title: str, notes: Sequence[str] = ()) -> str:
    """One line per job (script, legacy setting and where it came from, mode, steps, verdict,
    wall time, the parts that did not pass or the error), the notes, and a closing
    ``VERDICT:`` line."""
    job_notes = [f"{o.job.rel}: {n}" for o in outcomes for n in o.job.notes if not n.startswith("selected: ")]
    return _table([_row_from_outcome(o) for o in outcomes], title, [*notes, *dict.fromkeys(job_notes)])


def tree_dict(outcomes: Sequence[Outcome], against: str | None, notes: Sequence[str] = ()) -> dict[str, Any]:
    """The ``--json`` document of a verify of several jobs (schema :data:`TREE_SCHEMA`)."""
    results = []
    for o in outcomes:
        results.append(
            {
                "script": o.job.rel,
                "mode": o.job.mode.name,
                "mode_source": o.job.mode_source,
                "legacy_env": dict(o.job.legacy_env),
                "legacy_env_source": list(o.job.source),
                "args": list(o.job.args),
                "args_source": list(o.job.args_source),
                "notes": list(o.job.notes),
                "status": o.status,
                "report": report_dict(o.report) if o.report is not None else None,
                "error": error_dict(o.error) if o.error is not None else None,
            }
        )
    code = exit_code(o.status for o in outcomes)
    return {
        "schema": TREE_SCHEMA,
        "against": against,
        "passed": code == 0 and bool(outcomes),
        "exit_code": code,
        "notes": list(notes),
        "results": results,
    }


def merge_documents(paths: Sequence[Path]) -> tuple[str, dict[str, Any], int]:
    """Merge ``--json`` documents (reports, error documents, tree documents) into one table,
    one tree document and one exit code. Raises ``ValueError`` for a file that is not one."""
    rows: list[Row] = []
    results: list[dict[str, Any]] = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot be read as JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a bf16-migrate verify --json document")
        found = _rows_from_document(data, str(path))
        rows.extend(found)
        if data.get("schema") == TREE_SCHEMA:
            results.extend(data.get("results", []))
        else:
            results.append(
                {
                    "script": str(data.get("script") or path),
                    "mode": data.get("mode"),
                    "legacy_env": data.get("legacy_env") or {},
                    "legacy_env_source": data.get("legacy_env_source") or [],
                    "status": found[0].status,
                    "report": data if "parts" in data else None,
                    "error": data.get("error") if "parts" not in data else None,
                }
            )
    code = exit_code(r.status for r in rows)
    doc = {
        "schema": TREE_SCHEMA,
        "against": None,
        "passed": code == 0 and bool(rows),
        "exit_code": code,
        "notes": [f"merged from {len(paths)} file(s)"],
        "results": results,
    }
    return _table(rows, f"bf16-migrate verify --merge: {len(paths)} file(s), {len(rows)} verify(s)"), doc, code
