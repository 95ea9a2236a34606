"""``verify --markdown FILE``: a verify's result as Markdown, for a CI job's summary page
(``--markdown "$GITHUB_STEP_SUMMARY"``: GitHub's documentation, "Workflow commands for GitHub
Actions", "Adding a job summary", which renders GitHub Flavored Markdown).

Made from the ``--json`` documents (:func:`.report.report_dict`, :func:`.summary.tree_dict`,
the error document), so it shows what the JSON records: the verdict and its parts, the loss per
step (folded in a ``<details>`` block), the evidence per run, the notes; for several scripts, one
table and each script's section; for a verify that could not be made, the error, what to try
and the last output lines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..console import display_path

__all__ = ["report_markdown", "error_markdown", "tree_markdown"]

_RUNS = (("legacy", "legacy"), ("migrated", "migrated"), ("reference", "fp32-ref"))


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _num(value: Any, digits: str = ".6g") -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value  # "nan", "inf" as the JSON writes them
    return format(value, digits) if math.isfinite(value) else str(value)


def _env(env: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(env.items()))


def _title(doc: Mapping[str, Any], level: str) -> str:
    verdict = "PASS" if doc.get("passed") else "FAIL"
    return f"{level} bf16-migrate verify `{_path(doc.get('script'))}`: **{verdict}**"


def _path(script: Any) -> str:
    """A script's path as the other outputs show it (relative to the current directory when
    under it)."""
    return display_path(script) if script else str(script)


def _setting(doc: Mapping[str, Any]) -> str:
    parts = [f"mode `{doc.get('mode')}`", f"{doc.get('steps')} steps", f"PJRT_DEVICE={doc.get('device')}"]
    if doc.get("script_args"):
        parts.append(f"script arguments `{' '.join(doc['script_args'])}`")
    if doc.get("legacy_env"):
        source = ", ".join(doc.get("legacy_env_source") or [])
        parts.append(f"legacy run under `{_env(doc['legacy_env'])}`" + (f" (from {source})" if source else ""))
    if doc.get("legacy_version"):
        parts.append(f"legacy version {doc['legacy_version']}")
    return ", ".join(parts)


def report_markdown(doc: Mapping[str, Any], level: str = "##") -> str:
    """One verify report (a ``--json`` report document) as Markdown."""
    lines = [_title(doc, level), "", _setting(doc), "", "| part | verdict | detail |", "|---|---|---|"]
    for part in doc.get("parts", []):
        lines.append(f"| {part['name']} | {part['status']} | {_cell(part['detail'])} |")
    lines += _trace_lines(doc.get("trace_findings") or [])
    lines += ["", *_loss_table(doc), *_run_table(doc)]
    notes = doc.get("notes") or []
    if notes:
        lines += ["", *(f"- {_cell(note)}" for note in notes)]
    return "\n".join(lines) + "\n"


def _trace_lines(findings: list[Mapping[str, Any]]) -> list[str]:
    """The dtype trace's findings (``trace_findings`` of a report document): one item each,
    ``path:line:col`` CODE message, its evidence folded below."""
    if not findings:
        return []
    lines = ["", "**The run's dtype trace** (what the migrated run did that the legacy run did not, by line):", ""]
    for f in findings:
        excused = f.get("excused_by")
        kept = f" (kept: deliberate f32 island, {excused['code']} at line {excused['line']})" if excused else ""
        lines.append(f"- `{_path(f['path'])}:{f['line']}:{f['col']}` **{f['code']}** {_cell(f['message'])}{kept}")
        evidence = f.get("evidence") or []
        if evidence:
            lines.extend(f"  - {_cell(line)}" for line in evidence)
    return lines


def _loss_table(doc: Mapping[str, Any]) -> list[str]:
    runs = doc.get("runs") or {}
    present = [(name, title) for name, title in _RUNS if name in runs]
    steps = max((len(runs[name].get("losses") or []) for name, _ in present), default=0)
    if not steps:
        return []
    rel = doc.get("rel_diff") or []
    lines = [
        f"<details><summary>Loss per step ({steps} steps)</summary>",
        "",
        "| step | " + " | ".join(title for _, title in present) + f" | rel. diff vs {doc.get('baseline') or '-'} |",
        "|---:|" + "---:|" * (len(present) + 1),
    ]
    for i in range(steps):
        cells = [
            _num(losses[i]) if i < len(losses) else "-"
            for losses in ((runs[name].get("losses") or []) for name, _ in present)
        ]
        lines.append(f"| {i + 1} | " + " | ".join(cells) + f" | {_num(rel[i], '.2e') if i < len(rel) else '-'} |")
    return [*lines, "", "</details>", ""]


def _run_table(doc: Mapping[str, Any]) -> list[str]:
    runs = doc.get("runs") or {}
    lines = ["| run | steps | wall | matmuls bf16 | device parameters | state |", "|---|---:|---:|---|---|---|"]
    for name, title in _RUNS:
        run = runs.get(name)
        if run is None:
            continue
        graph = run.get("graph") or {}
        matmuls = f"{graph.get('matmuls_bf16')} of {graph.get('matmuls')}" if graph else "-"
        params = ", ".join(f"{k} x{v}" for k, v in (run.get("device_param_dtypes") or {}).items()) or "-"
        state = "ok" if run.get("ok") else f"failed: {_cell(run.get('error') or '')}"
        wall = f"{run['wall_time_s']:.1f} s" if run.get("wall_time_s") is not None else "-"
        lines.append(f"| {title} | {run.get('steps')} | {wall} | {matmuls} | {params} | {state} |")
    return lines


def error_markdown(script: str | None, error: Mapping[str, Any], level: str = "##") -> str:
    """A verify that could not be made (the ``error`` of a ``--json`` error document)."""
    lines = [
        f"{level} bf16-migrate verify `{_path(script)}`: **could not be made**",
        "",
        _cell(error.get("message", "")),
    ]
    if error.get("hint"):
        lines += ["", f"What to try: {_cell(error['hint'])}"]
    lines += _trace_lines(error.get("trace_findings") or [])
    tail = error.get("tail") or []
    if tail:
        lines += ["", "<details><summary>Last output lines</summary>", "", "```", *tail, "```", "", "</details>"]
    return "\n".join(lines) + "\n"


def tree_markdown(doc: Mapping[str, Any], title: str) -> str:
    """A verify of several scripts (a ``--json`` tree document): one table, then each script's
    section."""
    results: Sequence[Mapping[str, Any]] = doc.get("results") or []
    verdict = {0: "PASS", 1: "FAIL", 2: "ERROR"}.get(doc.get("exit_code", 2), "ERROR")
    lines = [f"## {title}: **{verdict if results else 'nothing to verify'}**", ""]
    if results:
        lines += ["| script | legacy setting (from) | mode | verdict | detail |", "|---|---|---|---|---|"]
        for r in results:
            setting = _env(r.get("legacy_env") or {}) or "(its own writes)"
            if r.get("legacy_env") and r.get("legacy_env_source"):
                setting += f" ({', '.join(r['legacy_env_source'])})"
            report = r.get("report") or {}
            failed = [p["name"] for p in report.get("parts", []) if p.get("status") != "PASS"]
            detail = (r.get("error") or {}).get("message", "") if r.get("error") else ", ".join(failed)
            lines.append(
                f"| `{r['script']}` | {_cell(setting)} | {r.get('mode')} | {r.get('status')} | {_cell(detail)} |"
            )
    notes = doc.get("notes") or []
    if notes:
        lines += ["", *(f"- {_cell(note)}" for note in notes)]
    for r in results:
        lines.append("")
        if r.get("report") is not None:
            lines.append(report_markdown(r["report"], level="###"))
        elif r.get("error") is not None:
            lines.append(error_markdown(r["script"], r["error"], level="###"))
    return "\n".join(lines) + "\n"
