"""Nothing to verify: a script that sets no legacy variable, refused before any run is made.

``bf16-migrate verify SCRIPT`` (without ``--against``) takes SCRIPT for the legacy script and
migrates it. When the migration changes nothing and the script sets no legacy variable the
codemod sees (a name in a docstring is not a setting: its FP32-reference rewrite, which removes
every legacy write, leaves the text as it is) and no launcher setting is given, there is no
legacy run to compare with: the script is already migrated, or never switched bf16 on. Running
the three processes would only end in a FAIL that says "no reduced precision in effect".
:func:`refuse_nothing_to_verify` raises :class:`~.records.RunError` instead, with what to run:
``--against REV`` for a script migrated in an earlier commit (the commit git names as the last
to change a line of it that names a legacy variable, when there is one), ``--legacy-env`` when a
launcher sets the switch. A script whose own setting the migration kept (and reported why) is
verified: the report names the line that still sets the variable.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .records import RunError
from .runner import LEGACY_VARIABLES

__all__ = ["refuse_nothing_to_verify", "refuse_unswitched_revision", "already_migrated_hint"]


def refuse_nothing_to_verify(
    script: Path, source: str, migrated: str, legacy_env: Mapping[str, str], refusals: Sequence[Any] = ()
) -> None:
    """Raise :class:`RunError` when the migration of ``source`` (the legacy text of ``script``)
    into ``migrated`` changed nothing and either no ``legacy_env`` is given and ``source`` sets no
    legacy variable (see the module docstring), or the launcher's setting ``legacy_env`` is kept by
    the migration's ``refusals`` (their findings: ``Outcome.refused()``), so the launcher still
    runs the script under it and there is no migrated run to make; return otherwise."""
    if migrated != source:
        return
    if legacy_env and refusals:
        first = refusals[0]
        names = ", ".join(f"{k}={v}" for k, v in legacy_env.items())
        raise RunError(
            f"{script}: nothing to verify: the migration keeps the launcher's {names} (line {first.line}, "
            f"{first.code}: {first.message}), so the script runs under it as before",
            hint=f"`bf16-migrate explain {first.code}` says what to change by hand; then migrate and verify again",
        )
    if legacy_env:
        return
    what = _sets_nothing(script, source)
    if what is not None:
        raise RunError(
            f"{script}: nothing to verify: the migration changes nothing, {what}, so there is no legacy run to "
            "compare with",
            hint=already_migrated_hint(script, [name for name in LEGACY_VARIABLES if name in source]),
        )


def refuse_unswitched_revision(script: Path, legacy_text: str, legacy_env: Mapping[str, str], label: str) -> None:
    """Raise :class:`RunError` when, under ``--against`` (the revision ``label`` holding ``legacy_text``), no
    ``legacy_env`` reaches the legacy run (no launcher of the revision sets one, none is given) and the revision's
    text sets no legacy variable itself (:func:`refuse_nothing_to_verify`'s reading): its run would be FP32, and a
    migration judged against it proves nothing (a text left FP32 PASSed, the codemod's bf16 one FAILed: found by
    a hunt on a script whose docstring alone names the switch)."""
    if legacy_env:
        return
    what = _sets_nothing(script, legacy_text)
    if what is not None:
        raise RunError(
            f"{script}: nothing to compare with: at {label} {what}, so the legacy run would be FP32, not the legacy "
            "numerics",
            hint="if a launcher (shell script, notebook, job spec) sets the variable, pass it: --legacy-env "
            "XLA_USE_BF16=1",
        )


def _sets_nothing(script: Path, source: str) -> str | None:
    """Why ``source`` sets no legacy variable the codemod can see, in words; None when it sets one."""
    sets, unread = _reading(source, script)
    if sets:
        return None
    named = [name for name in LEGACY_VARIABLES if name in source]
    if unread and named:
        return (
            f"it names {', '.join(named)} in a form the codemod does not read (line {unread[0].line}, "
            f"{unread[0].code}; a script it starts with that environment is verified alone, with "
            f"--legacy-env {named[0]}=1)"
        )
    if named:
        return f"it names {', '.join(named)} but sets none of them (in text only: a docstring, a comment, a message)"
    return "it sets no legacy variable"


def _reading(source: str, script: Path) -> tuple[bool, list]:
    """Whether the codemod sees a legacy write in ``source`` (its FP32-reference rewrite, every
    legacy write removed and nothing added, changes the text), and its unfixed findings other than
    documentation (BFM091) when it does not: a name in a form it cannot read (a ``subprocess`` env
    dict, BFM042), which is no proof that nothing is set."""
    from ..python import migrate_source

    try:
        result = migrate_source(source, "reference", str(script))
    except Exception:  # a text the codemod cannot read: let the runs say what happens
        return True, []
    if result.code != source:
        return True, []
    return False, [d for d in result.diagnostics if not d.fixed and d.code != "BFM091"]


def already_migrated_hint(script: Path, names: Sequence[str]) -> str:
    """What to run for a script that sets no legacy variable: when it is already migrated,
    verify it against the revision before its migration (``--against REV``; the commit git names
    as the last to change a line of the script that mentions one of ``names``, ``git log -G``,
    when there is one), or give the launcher's setting with ``--legacy-env``."""
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
