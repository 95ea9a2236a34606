"""One ``bf16-migrate verify`` run: the checkout of ``--against REV``, the plan (one script, a
launcher's launches, or every script a migration commit changed), the preflight, the verifies
(with ``--fix``: repaired, and the repairs written) and what they came to.

The click command (:mod:`bf16_migrate.cli`) parses the arguments into a :class:`VerifyRequest`
(a mode is a :class:`~bf16_migrate.rules.Mode` there, never a name), calls :func:`run_verify`
and renders the :class:`Verified` it returns (the report or the table, ``--json``,
``--markdown``, ``--plot``, the exit code). Every script is verified as a
:class:`~.jobs.VerifyJob`, the one way to :func:`bf16_migrate.verify.verify_script`. What goes to
stderr while it runs (the device, each job's start and end, ``--fix``'s rounds) is said here.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

import click

from .. import verify as verify_package  # verify_script looked up when called (tests stand in for it)
from ..rules import Mode
from .fix import FixResult, verify_and_fix
from .gitrev import Checkout, repo_root
from .jobs import Job, Outcome, VerifyJob
from .launch import plan_launcher
from .package import package_run
from .preflight import check_arguments, check_xla
from .progress import PrefixedProgress, make_progress
from .records import RunError
from .result import VerifyReport
from .runner import LEGACY_VARIABLES, read_source
from .summary import EXIT_CODES, EXIT_PASS, exit_code
from .tree import plan_script, plan_tree, run_jobs

__all__ = ["Shape", "VerifyRequest", "Verified", "run_verify"]


class Shape(Enum):
    """What a verify came to: ``LIST`` (``--list``: the jobs planned, none made), ``ONE`` (one
    script, with its full report), ``TABLE`` (a launcher's launches or a commit's scripts: one
    table, possibly empty)."""

    LIST = "list"
    ONE = "one"
    TABLE = "table"


@dataclass(frozen=True)
class VerifyRequest:
    """``bf16-migrate verify`` as the command line asks for it, its words turned into types once
    (:mod:`bf16_migrate.cli`): ``script`` (None: every script a migration changed since
    ``against``), its ``args`` and whether they were given after ``--`` (``explicit_args``: then
    they are every script's; otherwise each launch line's), whether ``script`` is a ``launcher``
    (run.sh, a Dockerfile...), ``mode`` (a :class:`~bf16_migrate.rules.Mode`; None only with
    ``against`` or a launcher: detected from the work tree), ``legacy_env`` (``--legacy-env``),
    ``against`` (``--against GITREV``), ``steps``, ``max_steps``, ``timeout``, ``jobs``
    (verifies at once), ``list_only`` (``--list``), ``plot`` (``--plot`` given: one verify only),
    ``trace``, ``trace_time``, ``fix`` and ``diff`` (``--fix``, ``--diff``)."""

    script: Path | None
    args: tuple[str, ...] = ()
    explicit_args: bool = False
    launcher: bool = False
    mode: Mode | None = None
    legacy_env: dict[str, str] = field(default_factory=dict)
    against: str | None = None
    steps: int = 20
    max_steps: int | None = None
    timeout: float = 600.0
    jobs: int = 1
    list_only: bool = False
    plot: bool = False
    trace: bool = True
    trace_time: float = verify_package.TRACE_TIME
    fix: bool = False
    diff: bool = False

    @property
    def settings(self) -> dict[str, Any]:
        """What every :class:`~.jobs.VerifyJob` of the run takes besides its job: ``max_steps``,
        ``trace``, ``trace_time``."""
        return {"max_steps": self.max_steps, "trace": self.trace, "trace_time": self.trace_time}


@dataclass(frozen=True)
class Verified:
    """What :func:`run_verify` came to (``shape``): the jobs ``planned`` and the plan's ``notes``;
    ``sha`` and ``label`` of the ``--against`` checkout (None without); for ``ONE``, the
    ``report``, ``--fix``'s outcome (``fixed``) and whether the work tree holds the migration
    verified (``in_tree``: ``--against``, or ``--fix`` wrote it); for ``TABLE``, the
    ``outcomes`` and the ``seconds`` they took."""

    shape: Shape
    planned: list[Job]
    notes: list[str]
    sha: str | None = None
    label: str | None = None
    report: VerifyReport | None = None
    fixed: FixResult | None = None
    in_tree: bool = False
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        """The exit code (:data:`.summary.EXIT_CODES`): 0 for a list, the verdict's for one
        report, the table's (4 when nothing was verified) for several."""
        if self.shape is Shape.LIST:
            return EXIT_PASS
        if self.shape is Shape.ONE:
            assert self.report is not None
            return EXIT_CODES[self.report.verdict.status]
        return exit_code(o.status for o in self.outcomes)


def run_verify(request: VerifyRequest, usage: Callable[[str], NoReturn]) -> Verified:
    """Make the verify ``request`` asks for: check out ``against`` (removed again on return),
    plan, then list (``list_only``), verify the one job with its full report (``fix``: repaired,
    the repairs written or, with ``diff``, printed to stdout), or verify them all (``jobs`` at
    once) for one table. ``usage(message)`` is called (and must not return) for a usage error
    found only once the plan is made (``--plot`` with several verifies).

    Raises :class:`~.records.RunError` when a verify that is no table's cannot be made (git,
    the preflight, the runs, ``--fix``'s write), and KeyboardInterrupt when stopped (the runs
    stopped and their temporary files removed)."""
    notes: list[str] = []
    script, against = request.script, request.against
    with ExitStack() as stack:
        checkout = None
        if against is not None:
            where = script.resolve().parent if script is not None else Path.cwd()
            checkout = stack.enter_context(Checkout(repo_root(where, against), against))
        sha, label = (checkout.sha, checkout.label) if checkout is not None else (None, None)
        planned = _plan(request, checkout, notes)
        if request.list_only:
            return Verified(Shape.LIST, planned, notes, sha, label)
        if request.plot and len(planned) != 1:
            usage(f"--plot draws one verify; there are {len(planned)} here (verify them one at a time, see --list)")
        if planned:
            _preflight([(job.script, list(job.args)) for job in planned])
        if len(planned) == 1 and script is not None and not request.launcher:
            return _verify_one(request, planned[0], checkout, notes, sha, label)
        if not planned:
            return Verified(Shape.TABLE, planned, notes, sha, label)
        started = time.monotonic()
        outcomes = _verify_all(request, planned, checkout)
        return Verified(Shape.TABLE, planned, notes, sha, label, outcomes=outcomes, seconds=time.monotonic() - started)


def _plan(request: VerifyRequest, checkout: Any, notes: list[str]) -> list[Job]:
    """The jobs of one legacy script (no ``against``: SCRIPT is migrated on the fly), of a
    launcher, of one script against a revision, or of a whole commit."""
    script, mode, env = request.script, request.mode, request.legacy_env
    if request.against is None and not request.launcher:
        assert script is not None and mode is not None
        source = ["--legacy-env"] if env else []
        return [Job(script, str(script), env, source, mode, "the command line", args=list(request.args))]
    if request.launcher:
        assert script is not None
        return plan_launcher(script, checkout, mode, env, request.steps, list(request.args), notes)
    if script is not None:
        planned = plan_script(script, checkout, mode, env, list(request.args))
        _refuse_unchanged(script, checkout, planned)
        return planned
    return plan_tree(checkout, mode, env, list(request.args) if request.explicit_args else None, notes)


def _verify_one(
    request: VerifyRequest, job: Job, checkout: Any, notes: list[str], sha: str | None, label: str | None
) -> Verified:
    """The one job, with its progress (``--fix``: verified, repaired and verified again, then the
    migration written with its repairs, or shown with ``--diff``). Without a checkout the script
    is the legacy file, migrated on the fly; with one the work tree holds the migration."""
    verify = VerifyJob.planned(job, checkout, steps=request.steps, timeout=request.timeout, **request.settings)
    fixed = None
    with make_progress(request.steps, ["legacy", "migrated", "reference"]) as progress:
        if request.fix:
            fixed = _fix(verify, progress)
            report = fixed.report
        else:
            report = verify.run(progress)
    written = False
    if fixed is not None:
        _write_fix(fixed, job.script, job.mode, job.legacy_env, request.diff, against=checkout is not None)
        if report is None:  # no verdict (no optimizer step): its trace repaired all the same
            raise fixed.error
        written = not request.diff and bool(fixed.applied)  # --fix wrote the migration
    in_tree = checkout is not None or written
    return Verified(Shape.ONE, [job], notes, sha, label, report=report, fixed=fixed, in_tree=in_tree)


def _verify_all(request: VerifyRequest, planned: list[Job], checkout: Any) -> list[Outcome]:
    """Every planned job (``request.jobs`` at once, each with its progress), their outcomes in
    order (:func:`.tree.run_jobs`)."""
    jobs, steps = request.jobs, request.steps

    def progress_for(job: Job, index: int) -> Any:
        if jobs > 1:
            return PrefixedProgress(sys.stderr, steps, job.rel)
        return make_progress(steps, ["legacy", "migrated", "reference"])

    if jobs > 1:
        _warn_cores(jobs)
    return run_jobs(
        planned,
        checkout,
        steps=steps,
        timeout=request.timeout,
        parallel=jobs,
        progress_for=progress_for,
        announce=lambda text: click.echo(f"verify: {text}", err=True),
        **request.settings,
    )


def _preflight(checks: list[tuple[Path, list[str]]]) -> None:
    """Before any run (:mod:`.preflight`): torch and torch-xla installed, the device named, each
    script accepting its arguments. Raises ``RunError``."""
    click.echo(f"verify: {check_xla().describe()}", err=True)
    for script, args in checks:
        try:
            source = read_source(script)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue  # the verify itself says it cannot read it
        if check_arguments(script, args, source, drop=LEGACY_VARIABLES, package=package_run(script, source)):
            click.echo(f"verify: {script.name} accepts its arguments ({' '.join(args) or 'none'})", err=True)


def _warn_cores(jobs: int) -> None:
    """Say so on stderr when ``--jobs`` makes more XLA processes than there are cores."""
    per = verify_package.default_jobs(os.environ.get("PJRT_DEVICE", "CPU"))
    cores = os.cpu_count() or 1
    if jobs * per > cores:
        click.echo(
            f"verify: --jobs {jobs} makes up to {jobs * per} XLA processes at once ({per} per script) on {cores} "
            "core(s): the runs will compete for them",
            err=True,
        )


def _refuse_unchanged(script: Path, checkout: Any, planned: list[Job]) -> None:
    """``verify SCRIPT --against REV`` when nothing that SCRIPT's legacy run depends on was
    migrated: the same text, and no launcher of REV switches bf16 on for it. Raises
    ``RunError``."""
    legacy = checkout.path_for(script)
    from_launcher = any(job.legacy_env and job.source != ["--legacy-env"] for job in planned)
    if legacy.is_file() and read_source(legacy) == read_source(script) and not from_launcher:
        raise RunError(
            f"--against {checkout.rev}: {script} is the same at {checkout.rev} as in the work tree, so nothing was "
            "migrated between them",
            hint="name the commit before the migration (e.g. HEAD~1), or migrate the file first",
        )


def _fix(verify: VerifyJob, progress: Any) -> FixResult:
    """``verify --fix``: verify, repair what the trace names, verify again
    (:func:`.fix.verify_and_fix`), each round said on stderr."""

    def said(number: int, fix_round: Any) -> None:
        click.echo(
            f"verify --fix: round {number}: {len(fix_round.applied)} repair(s) applied, {len(fix_round.left)} left"
            + (f"; verdict {fix_round.verdict}" if fix_round.verdict else ""),
            err=True,
        )

    return verify_and_fix(
        verify.script, verify=verify_package.verify_script, on_round=said, progress=progress, **verify.kwargs()
    )


def _write_fix(
    fixed: FixResult, script: Path, mode: Mode, legacy_env: dict[str, str], diff: bool, against: bool
) -> None:
    """Write (``--diff``: print) the migration with the repairs ``verify --fix`` applied, through
    the rewrite (:func:`bf16_migrate.project.migrate_paths`: the same codemod, one change).
    ``against``: the work tree holds the migration already (only the repairs change it);
    otherwise the script is legacy and the migration is written with them, as `bf16-migrate
    SCRIPT` writes it. The text written must be the text verified; anything else is an error
    (``RunError``)."""
    from ..project import migrate_paths

    click.echo(f"verify --fix: {fixed.stopped}; {len(fixed.applied)} repair(s) in all", err=True)
    if not fixed.applied:
        return
    outcome = migrate_paths(
        [script], mode, write=not diff, legacy_env=None if against else (legacy_env or None), repairs=fixed.applied
    )
    if outcome.errors:
        raise RunError(f"verify --fix: the repairs could not be written: {outcome.errors[0]}")
    verified = {p.resolve(): text for p, text in fixed.texts.items()}
    for path, (_old, new) in outcome.sources.items():
        if path.resolve() in verified and verified[path.resolve()] != new:
            raise RunError(
                f"verify --fix: {path}: the rewrite would write another text than the one verified; nothing written"
            )
    if diff:
        for path in outcome.changed:
            sys.stdout.flush()
            sys.stdout.buffer.write(outcome.diffs[path])
        sys.stdout.flush()
        return
    names = ", ".join(str(p) for p in outcome.changed) or "nothing"
    click.echo(f"verify --fix: wrote {names}", err=True)
