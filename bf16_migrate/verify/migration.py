"""What ``verify SCRIPT`` runs as the migrated side: the rewrite's own decision, not a second one.

``bf16-migrate verify SCRIPT`` (without ``--against``) proves what ``bf16-migrate SCRIPT`` would
write. So the migrated side is made by the rewrite itself, :func:`bf16_migrate.project.
migrate_paths` over ``[SCRIPT]`` without writing: the script's migration as the cross-file plan
makes it (its launchers, ``--legacy-env``), and the modules of the tree it imports that the
rewrite migrates with it (:mod:`bf16_migrate.tree_modules`: an optimizer class in a sibling file,
a reader of the variable). The migrated run then imports those migrated modules (staged beside
the migrated copy, :func:`bf16_migrate.verify.runner.stage_script`), as the rewritten tree would.

This is the seam where one deciding function ("which files migrate", shared by the rewrite and
verify) plugs in: :func:`rewrite` is the only place verify asks it.

When the rewrite changes nothing and the script sets no legacy variable the codemod sees (a
name in a docstring is not a setting; its FP32-reference rewrite, which removes every legacy
write, leaves it as it is) and no launcher setting is given, nothing would be proven: the script
is already migrated, or never switched bf16 on. :func:`rewrite` then raises
:class:`~.records.RunError` with what to run instead (``--against REV`` for a script migrated in
an earlier commit, with the commit that last changed its mentions of the variables when git
knows it; ``--legacy-env`` when a launcher sets the switch), before any run is made. A script
whose own setting the rewrite kept (and reported why) is verified: the report names the line
that still sets the variable.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .records import RunError

__all__ = ["Rewrite", "rewrite", "already_migrated_hint"]


@dataclass
class Rewrite:
    """The migrated side of a verify: ``script``, the migrated text of the script; ``modules``,
    the other Python files the rewrite changes with it (absolute path -> new text);
    ``diagnostics``, the script's findings (objects with ``code``, ``line``, ``col``,
    ``message``, ``fixed``)."""

    script: str
    modules: dict[Path, str] = field(default_factory=dict)
    diagnostics: list[Any] = field(default_factory=list)


def rewrite(script: Path, source: str, mode: str, legacy_env: Mapping[str, str]) -> Rewrite:
    """The rewrite of ``script`` (text ``source``) in ``mode``, as ``bf16-migrate SCRIPT --mode
    MODE [--legacy-env K=V]`` would write it (nothing is written). Raises :class:`RunError` when
    the rewrite cannot read or migrate the script, or changes nothing its run depends on (see the
    module docstring); ``ValueError`` for an unknown mode."""
    from ..project import migrate_paths
    from ..scan import ScanError

    script = Path(script).resolve()
    try:
        outcome = migrate_paths([script], mode, write=False, legacy_env=dict(legacy_env) or None)
    except ScanError as exc:
        raise RunError(f"{script}: {exc}") from exc
    mine = [e for e in outcome.errors if e.startswith(str(script))]
    if mine:
        raise RunError(f"{script}: could not be migrated in mode {mode}: {mine[0]}")
    new: dict[Path, str] = {}
    for path, (_old, text) in outcome.sources.items():
        resolved = Path(path).resolve()
        if resolved.suffix == ".py":
            new[resolved] = text
    diagnostics = [d for d in outcome.diagnostics if Path(d.path).resolve() == script]
    migrated = new.pop(script, source)
    if migrated == source and not new and not legacy_env and not _sets_a_variable(source, script):
        raise _nothing_migrated(script, source)
    return Rewrite(migrated, new, diagnostics)


def _sets_a_variable(source: str, script: Path) -> bool:
    """Whether the codemod sees a legacy write in ``source``: its FP32-reference rewrite (every
    legacy write removed, nothing added) changes the text."""
    from ..python import migrate_source

    try:
        return migrate_source(source, "reference", str(script)).code != source
    except Exception:  # a text the codemod cannot read: let the runs say what happens
        return True


def _nothing_migrated(script: Path, source: str) -> RunError:
    """The error for a script that sets no legacy variable: what it names, what to run."""
    from .runner import LEGACY_VARIABLES

    named = [name for name in LEGACY_VARIABLES if name in source]
    what = (
        f"it names {', '.join(named)} but sets none of them (in text only: a docstring, a comment, a message)"
        if named
        else "it sets no legacy variable"
    )
    return RunError(
        f"{script}: nothing to verify: the rewrite changes nothing, {what}, so there is no legacy run to compare with",
        hint=already_migrated_hint(script, named or list(LEGACY_VARIABLES)),
    )


def already_migrated_hint(script: Path, names: Sequence[str]) -> str:
    """What to run for a script whose rewrite changes nothing: when it is already migrated,
    verify it against the revision before its migration (``--against REV``; the commit git
    names as the last to change a line of the script that mentions one of ``names``, ``git log -G``, when there
    is one), or give the launcher's setting with ``--legacy-env``."""
    rev = _last_change(script, names)
    against = (
        f"bf16-migrate verify {script.name} --against {rev}~1 (the commit before {rev}, the last to change a line "
        f"of it that names {names[0]})"
        if rev
        else f"bf16-migrate verify {script.name} --against REV, REV being the commit before the migration"
    )
    return (
        f"if {script.name} is already migrated, verify it against its legacy version: {against}; if a launcher sets "
        "the variable, pass it: --legacy-env XLA_USE_BF16=1"
    )


def _last_change(script: Path, names: Sequence[str]) -> str | None:
    """The short hash of the last commit that added or removed a line of ``script`` mentioning
    one of ``names`` (``git log -G``: a migration that turns the write into a mention in a
    docstring keeps their count, which ``-S`` would miss), or None (no git, no such commit)."""
    for name in names:
        try:
            proc = subprocess.run(
                ["git", "log", "-n", "1", "--format=%h", f"-G{name}", "--", script.name],
                cwd=str(script.parent),
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip()
    return None
