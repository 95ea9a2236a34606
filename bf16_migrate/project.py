"""Migrate a set of files: scan, migrate each, write (or diff/check), collect the findings.

No click here: :func:`migrate_paths` returns an :class:`Outcome` the CLI turns into output and
an exit code.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from .diagnostics import Diagnostic
from .python import ParseError, migrate_source
from .scan import Candidate, ScanError, first_mention, scan
from .write import ReadError, read_source, write_atomic


@dataclass
class Outcome:
    """What one run did: ``changed`` files (written, or that would be with --diff/--check),
    unified ``diffs`` by file, the ``diagnostics``, and per-file ``errors`` (one line each)."""

    changed: list[Path] = field(default_factory=list)
    diffs: dict[Path, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files_seen: int = 0


def migrate_paths(paths: list[Path], mode: str, write: bool, exclude: tuple[str, ...] = ()) -> Outcome:
    """Migrate every candidate file under ``paths`` in ``mode``; write only when ``write``.

    Raises :class:`ScanError` when a path does not exist. A file that cannot be read, decoded or
    parsed is recorded in ``Outcome.errors`` and left untouched; the others still run."""
    outcome = Outcome()
    for candidate in scan(paths, exclude):
        outcome.files_seen += 1
        _one(candidate, mode, write, outcome)
    return outcome


def _one(candidate: Candidate, mode: str, write: bool, outcome: Outcome) -> None:
    path = candidate.path
    try:
        source = read_source(path)
    except ReadError as exc:
        outcome.errors.append(str(exc))
        return
    if candidate.kind != "python":
        where = first_mention(source.text)
        if where is not None:
            line, col, variable = where
            outcome.diagnostics.append(
                Diagnostic("BFM090", str(path), line, col, f"{variable} is set in a file bf16-migrate cannot rewrite yet: remove it by hand and migrate the Python script it launches", False)
            )
        return
    try:
        result = migrate_source(source.text, mode, str(path))
    except ParseError as exc:
        outcome.errors.append(str(exc))
        return
    outcome.diagnostics.extend(result.diagnostics)
    if result.code == source.text:
        return
    outcome.changed.append(path)
    outcome.diffs[path] = "".join(
        difflib.unified_diff(
            source.text.splitlines(keepends=True),
            result.code.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
    if write:
        try:
            write_atomic(path, result.code, source.encoding)
        except OSError as exc:
            outcome.errors.append(f"{path}: cannot write: {exc.strerror or exc}")
            outcome.changed.remove(path)


__all__ = ["Outcome", "ScanError", "migrate_paths"]
