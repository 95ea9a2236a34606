"""The repairs of a verify run's dtype trace, applied by the rewrite: ``--trace FILE`` and
``verify --fix``.

``bf16-migrate verify`` names the places where the migrated run computed in f32 on the device,
handed bf16 to the host or copied the model before its cast, each with a repair site where a
generic repair exists (:class:`bf16_migrate.repairs.RepairSite`, in the coordinates of the
migrated text the run ran). Its ``--json`` document carries them (``trace_findings[].repair``).
:func:`read_trace_file` reads them back from such a document (a report, a whole-commit tree
document, or the error document of a run that could not be made), and :func:`repair_results`
applies them to the rewrite's results (the migrated text of each file; a file the migration
leaves as it is, an already migrated one at ``verify --against``, is read as it is), so that a
CI job that ran verify once can apply the repairs without the device, through the same
one-change commit. The rewrite path: no torch, no verify import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bounds import Bounds
from .carriers.model import FileResult
from .diagnostics import Diagnostic
from .repairs import RepairSite, apply_repairs
from .write import ReadError, read_source

__all__ = ["StoredTrace", "read_trace_file", "repair_results"]


@dataclass
class StoredTrace:
    """The repairs a verify ``--json`` document holds: ``sites`` and the ``modes`` it verified
    (the rewrite's ``--mode`` must be one of them: a repair is the mode's)."""

    sites: list[RepairSite] = field(default_factory=list)
    modes: set[str] = field(default_factory=set)


def read_trace_file(path: Path) -> StoredTrace:
    """The repair sites of the verify JSON document at ``path`` (``verify --json``: a report, a
    tree document's ``results[].report``, an error document's ``error``). A relative site path
    is taken from the current directory, as verify wrote it. Raises ValueError with a one-line
    message naming the file when it cannot be read or holds no verify document."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--trace {path}: cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--trace {path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("bf16-migrate/verify"):
        raise ValueError(f"--trace {path}: not a `bf16-migrate verify --json` document (no bf16-migrate/verify schema)")
    stored = StoredTrace()
    for doc in _reports(data):
        if doc.get("mode"):
            stored.modes.add(str(doc["mode"]))
        for n, finding in enumerate(doc.get("trace_findings") or [], 1):
            raw = finding.get("repair") if isinstance(finding, dict) else None
            if not raw or finding.get("excused_by"):
                continue
            try:
                site = RepairSite.from_dict(raw)
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"--trace {path}: finding {n} has a repair that cannot be read ({exc!r})") from None
            stored.sites.append(site)
    return stored


def _reports(data: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """The report documents inside a verify document (itself, a tree's results, an error)."""
    if "results" in data:
        for result in data.get("results") or []:
            if isinstance(result, dict):
                report = result.get("report") or {}
                error = result.get("error") or {}
                if isinstance(report, dict):
                    yield report
                if isinstance(error, dict):
                    yield {**error, "mode": result.get("mode")}
        return
    yield data
    error = data.get("error")
    if isinstance(error, dict):
        yield {**error, "mode": data.get("mode")}


def repair_results(
    results: list[FileResult], sites: Sequence[RepairSite], paths: list[Path], errors: list[str]
) -> list[FileResult]:
    """``results`` with the repairs of ``sites`` applied to each file's new text (a file the run
    did not migrate is read and added; one outside the paths given is an error, left alone), and
    each repaired or left site reported on its file: the trace's finding, fixed where a repair
    applied, unfixed with why where none did."""
    bounds = Bounds(paths)
    by_path: dict[str, list[RepairSite]] = {}
    for site in sites:
        by_path.setdefault(os.path.realpath(site.path), []).append(site)
    index = {os.path.realpath(r.path): r for r in results}
    out = list(results)
    for real, group in by_path.items():
        result = index.get(real)
        if result is None:
            where = Path(group[0].path)
            if bounds.outside(where) is not None:
                errors.append(f"{where}: --trace names it, but it is outside the paths given: not repaired")
                continue
            try:
                source = read_source(where)
            except ReadError as exc:
                errors.append(f"{exc} (--trace names it)")
                continue
            result = FileResult(where, source.text, source.text, source.encoding, [])
            out.append(result)
            index[real] = result
        outcome = apply_repairs(result.new, group)
        result.new = outcome.text
        shown = str(result.path)
        for site in outcome.applied:
            result.diagnostics.append(_finding(site, shown, True, ""))
        for site in outcome.already:
            result.diagnostics.append(_finding(site, shown, True, "already"))
        for site, why in outcome.left:
            result.diagnostics.append(_finding(site, shown, False, why))
    return out


def _finding(site: RepairSite, path: str, fixed: bool, why: str) -> Diagnostic:
    code, line, col = site.finding
    message = site.message or f"the run's dtype trace named `{site.op}` here"
    if fixed:
        message += f" (repaired{' already' if why else ''}: {site.kind.value.replace('_', ' ')})"
    else:
        message += f" (not repaired: {why})"
    return Diagnostic(code, path, line or site.span.line, col or site.span.col + 1, message, fixed)
