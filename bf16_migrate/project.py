"""Migrate a set of files: scan, plan across files, write (or diff/check), collect the findings.

Python files go through the codemod; carriers (shell, Dockerfile, YAML, ``.env``, notebooks)
through :mod:`bf16_migrate.carriers`, whose planner also migrates the Python scripts they launch
(found in the tree even when they were not among the paths given). No click here:
:func:`migrate_paths` returns an :class:`Outcome` the CLI turns into output and an exit code.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from .carriers import KINDS, CarrierError, analyze
from .carriers.link import CarrierFile, Planner
from .diagnostics import Diagnostic
from .scan import Candidate, ScanError, first_mention, kind_of, scan, walk
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


def _roots(paths: list[Path]) -> list[Path]:
    return [p if p.is_dir() else p.parent for p in paths]


def _root_of(path: Path, roots: list[Path]) -> Path:
    best = None
    rp = path.resolve()
    for root in roots:
        rr = root.resolve()
        if rr == rp or rr in rp.parents:
            if best is None or len(str(rr)) > len(str(best.resolve())):
                best = root
    return best if best is not None else path.parent


def migrate_paths(paths: list[Path], mode: str, write: bool, exclude: tuple[str, ...] = (), fp32_optimizer_state: bool = False) -> Outcome:
    """Migrate every candidate file under ``paths`` in ``mode``; write only when ``write``.

    Raises :class:`ScanError` when a path does not exist. A file that cannot be read, decoded or
    parsed is recorded in ``Outcome.errors`` and left untouched; the others still run. Every
    write is atomic (one file at a time, never half-written)."""
    outcome = Outcome()
    roots = _roots(paths)

    def load(path: Path, kind: str | None = None) -> CarrierFile | None:
        kind = kind or kind_of(path)
        if kind not in KINDS:
            return None
        try:
            source = read_source(path)
            analysis = analyze(kind, source.text, str(path))
        except (ReadError, CarrierError):
            return None  # only followed (a launch or an include): its own run reports it
        return CarrierFile(path, _root_of(path, roots), source.text, source.encoding, analysis, render=False)

    def includers(path: Path, root: Path) -> list[CarrierFile]:
        found = []
        needle = path.name.encode()
        for candidate_path, kind in walk(root, exclude):
            if kind not in ("shell", "dockerfile", "yaml") or candidate_path.resolve() == path.resolve():
                continue
            try:
                if needle not in candidate_path.read_bytes():
                    continue
            except OSError:
                continue
            loaded = load(candidate_path, kind)
            if loaded is not None:
                found.append(loaded)
        return found

    def read_python(path: Path) -> tuple[str, str]:
        source = read_source(path)
        return source.text, source.encoding

    planner = Planner(mode, read_python, load, includers, fp32_optimizer_state=fp32_optimizer_state)
    python_files: dict[Path, tuple[str, str]] = {}
    extra: list[Diagnostic] = []
    for candidate in scan(paths, exclude):
        outcome.files_seen += 1
        _one(candidate, roots, planner, python_files, extra, outcome)
    results = planner.run(python_files)
    outcome.errors.extend(planner.errors)
    by_path: dict[str, list[Diagnostic]] = {}
    for d in extra:
        by_path.setdefault(d.path, []).append(d)
    for result in results:
        by_path.setdefault(str(result.path), []).extend(result.diagnostics)
    for path in sorted(by_path):
        outcome.diagnostics.extend(by_path[path])
    for result in sorted(results, key=lambda r: str(r.path)):
        if result.new == result.old:
            continue
        path = result.path
        outcome.changed.append(path)
        outcome.diffs[path] = "".join(
            difflib.unified_diff(
                result.old.splitlines(keepends=True),
                result.new.splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
        )
        if write:
            try:
                write_atomic(path, result.new, result.encoding)
            except OSError as exc:
                outcome.errors.append(f"{path}: cannot write: {exc.strerror or exc}")
                outcome.changed.remove(path)
    return outcome


def _one(candidate: Candidate, roots: list[Path], planner: Planner, python_files: dict, extra: list, outcome: Outcome) -> None:
    path = candidate.path
    try:
        source = read_source(path)
    except ReadError as exc:
        outcome.errors.append(str(exc))
        return
    if candidate.kind == "python":
        python_files[path] = (source.text, source.encoding)
        return
    if candidate.kind in KINDS:
        try:
            analysis = analyze(candidate.kind, source.text, str(path))
        except CarrierError as exc:
            outcome.errors.append(str(exc))
            return
        planner.add(CarrierFile(path, _root_of(path, roots), source.text, source.encoding, analysis))
        return
    where = first_mention(source.text)
    if where is not None:
        line, col, variable = where
        extra.append(
            Diagnostic("BFM090", str(path), line, col, f"{variable} is set in a kind of file bf16-migrate does not rewrite: remove it by hand and migrate the Python script it launches", False)
        )


__all__ = ["Outcome", "ScanError", "migrate_paths"]
