"""What a verify over a tree is made of: a :class:`Job` (one script to verify, with its legacy
settings, mode and arguments) and its :class:`Outcome`. Planned by :mod:`.tree`, summed up by
:mod:`.summary`, both of which read these types from here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rules import Mode
from .records import RunError

__all__ = ["Job", "Outcome"]


@dataclass
class Job:
    """One verify to make: ``script`` (work tree, absolute), ``rel`` (relative to the
    repository's top), the ``legacy_env`` for the legacy run and where it came from
    (``source``: ``launcher:line`` entries, ``"--legacy-env"``, or ``"its own writes"``),
    ``mode`` and how it was chosen (``mode_source``), ``args`` for the script, ``notes``,
    ``depends``, ``args_source``."""

    script: Path
    rel: str
    legacy_env: dict[str, str]
    source: list[str]
    mode: Mode
    mode_source: str
    args: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    depends: list[str] = field(default_factory=list)
    """The changed files (relative, POSIX) the verdict speaks for: the script itself when it
    changed, its changed launchers, the changed modules it imports (set by :func:`plan_tree`)."""
    args_source: list[str] = field(default_factory=list)
    """Where ``args`` came from: ``["--"]`` (the command line), the ``launcher:line`` of the
    launch line they were read from, or empty (no arguments)."""

    def to_dict(self, against: str | None = None) -> dict[str, Any]:
        """The ``--list`` entry: what to verify, and the command that verifies it alone."""
        command = ["bf16-migrate", "verify", self.rel]
        if against:
            command += ["--against", against]
        command += ["--mode", self.mode.name]
        for key, value in sorted(self.legacy_env.items()):
            command += ["--legacy-env", f"{key}={value}"]
        if self.args:
            command += ["--", *self.args]
        return {
            "script": self.rel,
            "mode": self.mode.name,
            "mode_source": self.mode_source,
            "legacy_env": dict(self.legacy_env),
            "legacy_env_source": list(self.source),
            "args": list(self.args),
            "args_source": list(self.args_source),
            "notes": list(self.notes),
            "command": command,
        }


@dataclass
class Outcome:
    """A job and what came of it: a report (``report``) or the error that kept it from being
    made (``error``, a :class:`RunError`)."""

    job: Job
    report: Any = None
    error: RunError | None = None

    @property
    def status(self) -> str:
        if self.error is not None or self.report is None:
            return "ERROR"
        return "PASS" if self.report.passed else "FAIL"
