"""Prove a migration: run the legacy script and its migrated copy on an XLA device, compare.

``verify_script`` migrates a legacy training script (one that sets ``XLA_USE_BF16`` /
``XLA_DOWNCAST_BF16``) into a temporary copy, runs the original with the legacy variables in
force, the copy without them, and an FP32 reference (the legacy writes removed, nothing added),
each in its own process on the XLA CPU device (``PJRT_DEVICE=CPU`` unless the environment
names another), records the loss of every optimizer step without adding syncs, the dtypes of
parameters and optimizer state and the statistics of the graphs torch-xla executes
(:mod:`.graphs`), stops each run after ``steps`` steps, and judges the result
(:mod:`.compare`). Nothing here imports torch; the children do.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..rules import mode_named
from .compare import MODES, TOLERANCES, Verdict, judge
from .records import LEGACY, MIGRATED, REFERENCE, RunError, RunRecord
from .report import format_report, report_dict
from .runner import LEGACY_VARIABLES, Progress, Workspace, read_source, run_specs, stage_script

__all__ = [
    "MODES",
    "RunError",
    "RunRecord",
    "VerifyReport",
    "Verdict",
    "format_report",
    "report_dict",
    "verify_script",
    "default_jobs",
    "Progress",
]


def default_jobs(device: str, cpus: int | None = None) -> int:
    """Runs to make at once: on ``PJRT_DEVICE=CPU`` up to 3 (the three runs), at most one
    per core (``cpus``, default ``os.cpu_count()``); 1 on TPU, CUDA or NEURON, whose device one
    process holds at a time (not testable here: this follows the PJRT runtime's one-client-per-
    device model, it was not measured)."""
    if device.upper() != "CPU":
        return 1
    return max(1, min(3, cpus if cpus is not None else (os.cpu_count() or 1)))


@dataclass
class VerifyReport:
    """What :func:`verify_script` found.

    ``runs``: ``"legacy"`` / ``"migrated"`` / ``"reference"`` -> :class:`RunRecord` (losses
    as floats per optimizer step, step end times in seconds, parameter dtypes, XLA compile
    counts, the executed step graph's statistics; a run that failed but was not needed has
    ``error`` set). ``verdict``: the parts (runs, trains, precision, matches, graph) with their
    figures. ``diagnostics``: the migration's
    findings (objects with ``code``, ``line``, ``col``, ``message``, ``fixed``).
    ``wall_time_s``: seconds for the whole verify. ``passed``: every part passed.
    ``legacy_label``: where the legacy text came from (``--against``), or None.
    ``graphs``: whether the graphs were dumped (the graph part exists only then).
    ``legacy_env``: the variables added to the legacy run; ``legacy_env_source``: where they
    came from (``["run.sh:3"]`` for a launcher of the tree at ``--against``, ``["--legacy-env"]``).
    """

    script: Path
    mode: str
    steps: int
    runs: dict[str, RunRecord]
    verdict: Verdict
    script_args: list[str] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    device: str = "CPU"
    wall_time_s: float = 0.0
    migrated_source: str = ""
    legacy_label: str | None = None
    graphs: bool = True
    legacy_env: dict[str, str] = field(default_factory=dict)
    legacy_env_source: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def parts(self) -> list:
        return self.verdict.parts

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (see :func:`bf16_migrate.verify.report.report_dict`)."""
        return report_dict(self)


def _migrate(
    source: str, mode: str, path: Path, launched_with: Mapping[str, str] | None = None
) -> tuple[str, list[Any], str | None]:
    """The codemod's migration of ``source`` (the script at ``path``): its text, its findings,
    and the flag its launchers pass instead of the setting (amp through the script's own
    autocast flag: ``MigrationResult.launch_flag``), which the migrated run is given too."""
    try:
        from bf16_migrate.python import migrate_source
    except ImportError as exc:  # pragma: no cover - the package ships it
        raise RunError(f"the migration API is not available ({exc}); pass the migrated source explicitly") from exc
    from bf16_migrate.tree_modules import TreeFactsReader
    from bf16_migrate.write import read_source as read_file

    def read_python(module: Path) -> tuple[str, str]:
        found = read_file(module)
        return found.text, found.encoding

    tree = TreeFactsReader(read_python, lambda _: path.parent)(path, source)
    try:
        result = migrate_source(source, mode, str(path), launched_with=launched_with, tree=tree)
    except ValueError:
        raise
    except Exception as exc:  # ParseError and friends: the script could not be migrated
        raise RunError(f"{path}: could not be migrated in mode {mode}: {exc}") from exc
    if result.factory_changes:
        modules = ", ".join(sorted({change.path for change in result.factory_changes}))
        raise RunError(
            f"{path}: its migration in mode {mode} also changes modules of its tree ({modules}), which a verify of "
            "the script alone does not run",
            hint="migrate and verify the tree at once (`bf16-migrate DIR --mode MODE --verify`), or commit the "
            "migration and run `bf16-migrate verify SCRIPT --against REV`",
        )
    return result.code, list(result.diagnostics), result.launch_flag


def verify_script(
    script: Path,
    mode: str = "stochastic",
    steps: int = 20,
    legacy_env: Mapping[str, str] = MappingProxyType({}),
    script_args: Sequence[str] = (),
    timeout: float = 600.0,
    python: str = sys.executable,
    *,
    migrated_source: str | None = None,
    reference_source: str | None = None,
    legacy_source: str | None = None,
    run_reference: bool = True,
    jobs: int | None = None,
    env: Mapping[str, str] | None = None,
    graphs: bool = True,
    progress: Progress | None = None,
    legacy_label: str | None = None,
    checkout: Any = None,
    legacy_env_source: Sequence[str] = (),
) -> VerifyReport:
    """Migrate ``script`` in ``mode``, run legacy / migrated / FP32 reference, and judge.

    ``script``: the legacy training script (a path). ``mode``: ``"stochastic"``,
    ``"gpu-compatible"`` or ``"amp"``. ``steps``: optimizer steps recorded per run (the
    harness stops the script at the next ``backward`` after that; a script that ends sooner is
    compared over the steps it made). ``legacy_env``: variables for the legacy run only (the
    switch a launcher used to set, e.g. ``{"XLA_USE_BF16": "1"}``). ``script_args``: passed to
    every run. ``timeout``: seconds of wall time per run. ``python``: the interpreter for the
    children (needs torch and torch-xla). ``migrated_source`` / ``reference_source``: use
    these texts instead of running the codemod (mode ``mode`` / ``"reference"``).
    ``legacy_source``: for ``verify --against REV``: ``script`` is already migrated and this
    is its legacy text (e.g. read from git by the caller); the legacy run then uses a copy of
    it, the migrated run ``script``'s own text, and the reference is migrated from it.
    ``run_reference``: also run the FP32 reference in stochastic / gpu-compatible modes (it
    gives the negative control and the precision gap the drift bound scales with; amp always
    runs it). ``jobs``: children run at once; default :func:`default_jobs` (2 on the CPU device
    with 2 or more cores, 1 on an accelerator, which one process holds at a time).
    ``env``: the environment the children start from (default ``os.environ``). ``graphs``:
    dump and read the executed graphs (the graph part of the verdict; see :mod:`.graphs`).
    ``progress``: a :class:`~bf16_migrate.verify.runner.Progress` told about each run's start,
    steps and end while they go. ``legacy_label``: where ``legacy_source`` came from, for the
    report (e.g. ``"git HEAD~1 (0123abcd)"``). ``checkout``: a :class:`~.gitrev.Checkout` of
    the revision before the migration (``verify --against REV``): the legacy run is the
    checkout's copy of ``script``, run in place, so every module it imports is the legacy one;
    the FP32 reference runs beside it (links to the checkout's files); ``PYTHONPATH`` entries
    inside the work tree point into the checkout for both; ``legacy_source`` defaults to the
    checkout's text and ``legacy_label`` to ``checkout.label``. ``legacy_env_source``: where
    ``legacy_env`` came from, for the report.

    Runs: the legacy run is the original file unchanged with ``legacy_env`` added; the
    migrated and reference runs are temporary copies with the legacy variables
    (``XLA_USE_BF16``, ``XLA_DOWNCAST_BF16``, ``XLA_USE_FP16``, ``XLA_DOWNCAST_FP16``) removed
    from the environment; all run in the script's directory (details in :mod:`.runner`).

    Returns a :class:`VerifyReport`; ``report.passed`` is the verdict (rules and tolerances
    in :mod:`.compare`). Raises :class:`RunError` when the script is missing or cannot be
    migrated, when the legacy text names no legacy variable while neither ``legacy_env`` nor
    the environment sets one, when the migrated run fails (non-zero exit, timeout, no record,
    zero steps), or
    when no comparison run is usable (the legacy run and the FP32 reference both failed for
    stochastic / gpu-compatible; the reference for amp); ``ValueError`` for an unknown mode.

    Long for its parameters' documentation; the body is phases: the legacy side
    (:func:`_legacy_side`), the texts to run (:func:`_texts`), the runs (:func:`_run`), the
    runs that must have worked (:func:`_raise_unusable`), the verdict (:func:`.compare.judge`).
    """
    if mode not in TOLERANCES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if steps < 1:
        raise ValueError("steps must be at least 1")
    started = time.monotonic()
    script = Path(script).resolve()
    if not script.is_file():
        raise RunError(f"{script}: no such script")
    base_env = dict(os.environ if env is None else env)
    try:
        source = read_source(script)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise RunError(f"{script}: cannot be read: {exc}") from exc
    legacy = _legacy_side(script, checkout, legacy_source, legacy_label, base_env)
    texts = _texts(
        script,
        mode,
        source,
        legacy.source,
        legacy_env,
        base_env,
        migrated_source,
        reference_source,
        need_reference=run_reference or mode == "amp",
    )
    args = [str(a) for a in script_args]
    common = dict(base_env=base_env, args=args, steps=steps, timeout=timeout, graphs=graphs)
    runs, device = _run(script, mode, legacy, texts, legacy_env, common, python=python, jobs=jobs, progress=progress)
    _raise_unusable(mode, runs)
    verdict = judge(mode, runs, requested_steps=steps, graphs=graphs, device=device)
    return VerifyReport(
        script=script,
        mode=mode,
        steps=steps,
        runs=runs,
        verdict=verdict,
        script_args=args,
        diagnostics=texts.diagnostics,
        device=device,
        wall_time_s=time.monotonic() - started,
        migrated_source=texts.migrated,
        legacy_label=legacy.label,
        graphs=graphs,
        legacy_env=dict(legacy_env),
        legacy_env_source=list(legacy_env_source),
    )


@dataclass
class _Legacy:
    """The legacy side of a verify: ``file``, the checkout's copy of the script run in place
    (None: the script itself, or a staged copy of ``source``); ``source``, its text when it is
    not the script's (None: the script is the legacy file); ``label``, where it came from;
    ``base_env``, the environment its runs start from (``PYTHONPATH`` mapped into the
    checkout); ``checkout``."""

    file: Path | None
    source: str | None
    label: str | None
    base_env: dict[str, str]
    checkout: Any = None


def _legacy_side(
    script: Path, checkout: Any, legacy_source: str | None, legacy_label: str | None, base_env: dict[str, str]
) -> _Legacy:
    """Where the legacy run comes from: with a checkout (``--against REV``), its copy of
    ``script``, its text and label. Raises :class:`RunError` when the checkout has no such file
    or it cannot be read."""
    if checkout is None:
        return _Legacy(None, legacy_source, legacy_label, base_env)
    legacy_file = checkout.legacy_file(script)
    rel = checkout.relative(script)
    if legacy_source is None:
        try:
            legacy_source = read_source(legacy_file)
        except (OSError, SyntaxError, UnicodeDecodeError) as exc:
            raise RunError(f"--against {checkout.rev}: {rel} cannot be read: {exc}") from exc
    legacy_base = base_env
    if base_env.get("PYTHONPATH"):
        legacy_base = {**base_env, "PYTHONPATH": checkout.map_pythonpath(base_env["PYTHONPATH"])}
    return _Legacy(
        legacy_file, legacy_source, legacy_label if legacy_label is not None else checkout.label, legacy_base, checkout
    )


@dataclass
class _Texts:
    """The texts the migrated and FP32 reference runs run (``reference`` None: no reference
    run), and the migration's findings."""

    migrated: str
    reference: str | None
    diagnostics: list[Any]
    migrated_args: list[str] = field(default_factory=list)
    """Arguments the migrated run gets besides the script's: the flag the migration passes on
    its launch lines instead of the legacy setting (amp through the script's own autocast)."""


def _texts(
    script: Path,
    mode: str,
    source: str,
    legacy_source: str | None,
    legacy_env: Mapping[str, str],
    base_env: Mapping[str, str],
    migrated_source: str | None,
    reference_source: str | None,
    *,
    need_reference: bool,
) -> _Texts:
    """The migrated text (the codemod's, or the work tree's when ``legacy_source`` is given)
    and the reference text (the legacy text migrated in ``"reference"`` mode). Raises
    :class:`RunError` when nothing names a legacy variable or the codemod cannot migrate."""
    diagnostics: list[Any] = []
    legacy_text = source if legacy_source is None else legacy_source
    inherited = [k for k in LEGACY_VARIABLES if base_env.get(k)]  # exported in the caller's shell
    if not legacy_env and not inherited and not any(name in legacy_text for name in LEGACY_VARIABLES):
        raise RunError(
            f"{script}: the legacy script names no legacy variable ({', '.join(LEGACY_VARIABLES)}): nothing to verify",
            hint=(
                "if a launcher (shell script, Dockerfile, job spec) sets it, pass --legacy-env XLA_USE_BF16=1; with "
                "--against, name the revision before the migration"
            ),
        )
    flag: str | None = None
    if migrated_source is None:
        if legacy_source is None:
            migrated_source, diagnostics, flag = _migrate(source, mode, script, launched_with=legacy_env)
        else:
            migrated_source = source
            if mode_named(mode).autocast and legacy_env and migrated_source == legacy_source:
                # the script unchanged under its launcher's setting: amp through its own flag?
                flag = _migrate(legacy_text, mode, script, launched_with=legacy_env)[2]
    if need_reference and reference_source is None:
        reference_source = _migrate(legacy_text, "reference", script)[0]
    return _Texts(migrated_source, reference_source if need_reference else None, diagnostics, [flag] if flag else [])


def _run(
    script: Path,
    mode: str,
    legacy: _Legacy,
    texts: _Texts,
    legacy_env: Mapping[str, str],
    common: dict[str, Any],
    *,
    python: str,
    jobs: int | None,
    progress: Progress | None,
) -> tuple[dict[str, RunRecord], str]:
    """Make the runs (:mod:`.runner`) in a temporary workspace: the migrated copy, the legacy
    file (the checkout's in place, or the script, or a staged copy of the legacy text) and the
    FP32 reference; returns the records by run name and the ``PJRT_DEVICE`` they used."""
    with Workspace() as ws:
        migrated_spec = ws.spec(
            MIGRATED,
            stage_script(texts.migrated, script, ws.root / MIGRATED),
            script,
            drop=LEGACY_VARIABLES,
            **{**common, "args": [*common["args"], *texts.migrated_args]},
        )
        legacy_common = {**common, "base_env": legacy.base_env}
        checkout = legacy.checkout
        if legacy.file is not None:  # the checkout's file, run in place among the legacy modules
            legacy_spec = ws.spec(LEGACY, legacy.file, legacy.file, add=dict(legacy_env), **legacy_common)
            legacy_spec.aliases[str(checkout.tree)] = f"[{checkout.label}]"
            legacy_origin = legacy.file
        else:
            legacy_run = script if legacy.source is None else stage_script(legacy.source, script, ws.root / LEGACY)
            legacy_spec = ws.spec(LEGACY, legacy_run, script, add=dict(legacy_env), **common)
            legacy_origin = script
        specs = [migrated_spec, legacy_spec]
        if texts.reference is not None:
            reference_spec = ws.spec(
                REFERENCE,
                stage_script(texts.reference, legacy_origin, ws.root / REFERENCE),
                legacy_origin,
                drop=LEGACY_VARIABLES,
                **legacy_common,
            )
            if legacy.file is not None:
                reference_spec.aliases[str(checkout.tree)] = f"[{checkout.label}]"
            # amp needs the reference more than the legacy run: start it first.
            specs.insert(1 if mode == "amp" else 2, reference_spec)
        device = migrated_spec.env.get("PJRT_DEVICE", "CPU")
        runs = run_specs(specs, python=python, jobs=default_jobs(device) if jobs is None else jobs, progress=progress)
    return runs, device


def _raise_unusable(mode: str, runs: dict[str, RunRecord]) -> None:
    """Raise :class:`RunError` (carrying the runs) when the migrated run failed, or when no
    comparison run is usable (the FP32 reference for amp; the legacy run and its fallback, the
    reference, for the other modes)."""
    migrated = runs[MIGRATED]
    legacy = runs.get(LEGACY)
    reference = runs.get(REFERENCE)
    if not migrated.ok:
        err = migrated.as_error()
        if legacy is not None:
            err.message += (
                " (the legacy run succeeded: the migration broke the script)"
                if legacy.ok
                else f" (the legacy run failed too: {legacy.error})"
            )
            err.args = (err.message,)
        err.runs = dict(runs)
        raise err
    failure: RunError | None = None
    if mode == "amp":
        if reference is None or not reference.ok:
            failure = reference.as_error() if reference is not None else RunError("the FP32 reference run did not run")
    elif (legacy is None or not legacy.ok) and (reference is None or not reference.ok):
        failure = legacy.as_error() if legacy is not None else RunError("the legacy run did not run")
        if reference is not None and reference.error:
            failure.message += f" (and the FP32 reference, the fallback, failed too: {reference.error})"
            failure.args = (failure.message,)
    if failure is not None:
        failure.runs = dict(runs)
        raise failure
