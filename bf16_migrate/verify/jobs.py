"""What a verify over a tree is made of: a :class:`Job` (one script to verify, with its legacy
settings, mode and arguments) and its :class:`Outcome`. Planned by :mod:`.tree`, summed up by
:mod:`.summary`, both of which read these types from here. A :class:`VerifyJob` is one verify
as it is made: the script, its settings and the run's, the one way every caller (the command
line's :mod:`.run`, :func:`.tree.run_jobs`) calls :func:`bf16_migrate.verify.verify_script`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import verify as verify_package  # verify_script looked up when called (tests stand in for it)
from ..rules import Mode
from .parts import Status
from .records import RunError
from .result import VerifyReport
from .runner import Progress

__all__ = ["Job", "Outcome", "VerifyJob"]


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
    def status(self) -> Status:
        """FAIL for a migrated run that failed where the legacy run succeeded (``RunError.broke``)."""
        if self.error is not None and self.error.broke:
            return Status.FAIL
        if self.error is not None or self.report is None:
            return Status.ERROR
        return Status.PASS if self.report.passed else Status.FAIL


@dataclass(frozen=True)
class VerifyJob:
    """One verify to make, typed: the arguments of :func:`bf16_migrate.verify.verify_script` a
    verify of the command line or of a tree gives (see there): ``script`` (a path), ``mode`` (a
    :class:`~bf16_migrate.rules.Mode`, never a name), ``steps``, ``legacy_env`` and where it came
    from (``legacy_env_source``), ``script_args``, ``timeout``, ``checkout`` (a
    :class:`~.gitrev.Checkout` of the revision before the migration, or None), ``max_steps``,
    ``trace`` and ``trace_time`` (None: verify_script's default)."""

    script: Path
    mode: Mode
    steps: int
    legacy_env: Mapping[str, str] = field(default_factory=dict)
    script_args: tuple[str, ...] = ()
    timeout: float = 600.0
    checkout: Any = None
    legacy_env_source: tuple[str, ...] = ()
    max_steps: int | None = None
    trace: bool = True
    trace_time: float | None = None

    @classmethod
    def planned(cls, job: Job, checkout: Any, *, steps: int, timeout: float, **settings: Any) -> VerifyJob:
        """The verify of a planned :class:`Job` (its script, mode, legacy settings and arguments)
        with the legacy side from ``checkout``; ``settings``: ``max_steps``, ``trace``,
        ``trace_time``. Raises TypeError for another keyword."""
        return cls(
            job.script,
            job.mode,
            steps,
            legacy_env=job.legacy_env,
            script_args=tuple(job.args),
            timeout=timeout,
            checkout=checkout,
            legacy_env_source=tuple(job.source),
            **settings,
        )

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~bf16_migrate.verify.verify_script` (all but the script)."""
        kwargs: dict[str, Any] = dict(
            mode=self.mode,
            steps=self.steps,
            legacy_env=self.legacy_env,
            script_args=list(self.script_args),
            timeout=self.timeout,
            checkout=self.checkout,
            legacy_env_source=list(self.legacy_env_source),
            max_steps=self.max_steps,
            trace=self.trace,
        )
        if self.trace_time is not None:
            kwargs["trace_time"] = self.trace_time
        return kwargs

    def run(self, progress: Progress | None = None) -> VerifyReport:
        """Make the verify (told to ``progress``): its report. Raises :class:`RunError` when it
        cannot be made, as :func:`~bf16_migrate.verify.verify_script` does."""
        return verify_package.verify_script(self.script, progress=progress, **self.kwargs())
