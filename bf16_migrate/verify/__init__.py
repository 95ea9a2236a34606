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

import dataclasses
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from bf16_migrate.carriers.model import FileResult
from bf16_migrate.write import read_source as read_file

from ..python.shebang_env import shebang_settings
from ..rules import DEFAULT_MODE, STOCHASTIC_ROUNDING_VAR, Mode, all_modes, is_truthy, load_rules, mode_named
from ..rules import REFERENCE as REFERENCE_MODE
from . import checks
from .allowance import Allowance, compile_allowance
from .check import CheckInput
from .compare import FAIL, INCONCLUSIVE, MODES, TOLERANCES, Verdict, judge
from .launchers import launched_with, tree_root
from .migration import refuse_nothing_to_verify, refuse_unswitched_revision
from .outputs import judge_after_host_training, judge_outputs, judge_without_backward
from .package import PackageRun, package_run, stage_package
from .parts import usable
from .records import AUTOCAST, CONTROL, LEGACY, MIGRATED, REFERENCE, RunError, RunRecord
from .report import format_report, report_dict
from .result import VerifyReport
from .runner import (
    AUTOCAST_ENV,
    FP32_ENV,
    LEGACY_VARIABLES,
    Progress,
    TraceSpec,
    Workspace,
    read_source,
    run_specs,
    stage_script,
)
from .trace_findings import TraceFinding, TraceSources, island_spans, same_lines, trace_findings, trace_part
from .unseen import Unseen, texts_run, unseen_changes
from .workcopy import Linked, linked_note

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
    "TRACE_TIME",
]

TRACE_TIME = 120.0
"""Seconds the legacy and migrated runs may go on after the recorded steps by default, so that
the dtype trace sees the code after the training loop (evaluation, EMA, checkpoints): the run
continues with the user's arguments to the script's end, stopped sooner by this budget (checked
at each ``backward``) or near ``--timeout`` (a timer)."""


def default_jobs(device: str, cpus: int | None = None) -> int:
    """Runs to make at once: on ``PJRT_DEVICE=CPU`` up to 3 (the three runs), at most one
    per core (``cpus``, default ``os.cpu_count()``); 1 on TPU, CUDA or NEURON, whose device one
    process holds at a time (not testable here: this follows the PJRT runtime's one-client-per-
    device model, it was not measured)."""
    if device.upper() != "CPU":
        return 1
    return max(1, min(3, cpus if cpus is not None else (os.cpu_count() or 1)))


class _Migrated(NamedTuple):
    """What :func:`_migrate` returns (see there)."""

    code: str
    diagnostics: list[Any]
    flag: str | None
    modules: dict[Path, str]
    kept_f32: bool
    loss_f32: bool
    islands: dict[Path, list[Any]]
    refusals: list[Any] = []
    """The findings of the migration's refusals (``Outcome.refused()``): why it keeps the switch."""


def _migrate(
    source: str, mode: Mode, path: Path, launched_with: Mapping[str, str] | None = None, modules: bool = True
) -> _Migrated:
    """The codemod's migration of ``source`` (the script at ``path``): its text, its findings
    (with ``modules``, those of the modules of the tree it imports too), the flag its launchers
    pass instead of the setting (amp through the script's own autocast flag:
    ``MigrationResult.launch_flag``), which the migrated run is given too, with ``modules``,
    the migrated text of each module of the tree that changes with it (:func:`_migrated_modules`),
    whether it keeps f32 the script asks for, and among it the loss (``Outcome.kept_f32``), and
    the deliberate f32 islands the migration kept (``Outcome.f32_islands``) by file, in the lines
    of the text it read."""
    try:
        from bf16_migrate.python import migrate_source
        from bf16_migrate.python.outcome import KeptF32
    except ImportError as exc:  # pragma: no cover - the package ships it
        raise RunError(f"the migration API is not available ({exc}); pass the migrated source explicitly") from exc
    from bf16_migrate.tree_modules import TreeFactsReader

    def read_python(module: Path) -> tuple[str, str]:
        found = read_file(module)
        return found.text, found.encoding

    package = package_run(path, source)
    root = package.top if package is not None else path.parent  # where its imports resolve from
    tree = TreeFactsReader(read_python, lambda _: root)(path, source)
    try:
        result = migrate_source(source, mode, str(path), launched_with=launched_with, tree=tree)
    except ValueError:
        raise
    except Exception as exc:  # ParseError and friends: the script could not be migrated
        raise RunError(f"{path}: could not be migrated in mode {mode}: {exc}") from exc
    if modules and not result.legacy_env and result.outcome.sets_on_import:
        handed = _handed_over(source, mode, path, dict(result.outcome.sets_on_import), root)
        if handed is not None:
            return handed
    diagnostics = list(result.diagnostics)
    staged: dict[Path, str] = {}
    islands: dict[Path, list[Any]] = {path.resolve(): list(result.outcome.f32_islands)}
    if modules and (result.switched or result.factory_changes):
        staged = _migrated_modules(path, source, result, mode, diagnostics, islands, root)
    # without ``modules`` the caller reads the script's migration only (what it keeps in f32), never runs it
    unstaged = sorted({c.path for c in result.factory_changes if Path(c.path).resolve() not in staged})
    if modules and unstaged:
        raise RunError(
            f"{path}: its migration in mode {mode} also changes modules of its tree ({', '.join(unstaged)}), which a "
            "verify of the script alone does not run",
            hint="migrate and verify the tree at once (`bf16-migrate DIR --mode MODE --verify`), or commit the "
            "migration and run `bf16-migrate verify SCRIPT --against REV`",
        )
    kept = result.outcome.kept_f32
    refusals = [finding for _, finding in result.outcome.refused()]
    return _Migrated(
        result.code, diagnostics, result.launch_flag, staged, bool(kept), KeptF32.LOSS in kept, islands, refusals
    )


def _handed_over(source: str, mode: Mode, path: Path, settings: dict[str, str], root: Path) -> _Migrated | None:
    """The migration of an entry script ``path`` that makes the legacy ``settings`` and hands its training
    to one module of its tree (``main.py``: ``os.environ["XLA_USE_BF16"] = "1"; import train;
    train.main()``; :func:`bf16_migrate.carriers.delegate.delegated_module`), as the rewrite makes it
    (:mod:`bf16_migrate.env_modules`): the module migrated as launched with the settings and staged
    for the migrated run, the entry's writes gone. None when the entry hands over to no one module, or
    when that module does not take the change (the entry then keeps its switch, as the rewrite does),
    or takes it through a flag of its own (which no launcher passes it here)."""
    from bf16_migrate.carriers.delegate import delegated_module
    from bf16_migrate.python import migrate_source
    from bf16_migrate.tree_modules import TreeFactsReader

    handed = delegated_module(path, source, root)
    if handed is None:
        return None
    handed = handed.resolve()
    text = read_source(handed)
    tree = TreeFactsReader(lambda module: (read_source(module), "utf-8"), lambda _: root)(handed, text)
    try:
        took = migrate_source(text, mode, str(handed), launched_with=settings, tree=tree)
    except Exception as exc:  # ParseError and friends: the module could not be migrated
        raise RunError(f"{handed}: could not be migrated in mode {mode}: {exc}") from exc
    if not all(name in took.legacy_env for name in settings) or took.launch_flag:
        return None
    inner = _migrate(text, mode, handed, launched_with=settings)
    entry = migrate_source(source, mode, str(path), imported_under=settings, importers_migrated=True)
    return inner._replace(
        code=entry.code,
        diagnostics=[*entry.diagnostics, *inner.diagnostics],
        modules={handed: inner.code, **inner.modules},
        islands={path.resolve(): list(entry.outcome.f32_islands), **inner.islands},
        refusals=[finding for _, finding in entry.outcome.refused()] + list(inner.refusals),
    )


def _migrated_modules(
    script: Path,
    source: str,
    result: Any,
    mode: Mode,
    diagnostics: list[Any],
    islands: dict[Path, list[Any]],
    root: Path | None = None,
) -> dict[Path, str]:
    """The modules of the tree under the script's directory that it imports, migrated as the
    rewrite migrates them (:func:`bf16_migrate.tree_modules.migrate_imported_modules`: they ran under
    the switch too): path -> migrated text, for those that change; their findings are added to
    ``diagnostics``. The migrated run stages them in place of the legacy ones, so it runs what the
    rewrite writes. Modules the script reaches elsewhere (``PYTHONPATH``) run as they are: a whole
    tree is proven by ``bf16-migrate DIR --verify``. Their deliberate f32 islands go into
    ``islands`` (path -> ``Outcome.f32_islands``). Raises :class:`RunError` when one cannot be
    read or migrated. ``root``: where the script's imports resolve from (its directory, or the top
    of its package: :mod:`.package`)."""
    from bf16_migrate.tree_modules import migrate_imported_modules

    script = script.resolve()
    home = (root or script.parent).resolve()
    errors: list[str] = []
    own = FileResult(
        script,
        source,
        result.code,
        "utf-8",
        [],
        dict(result.legacy_env),
        factory_changes=list(result.factory_changes),
        switched=dict(result.switched),
        loss_code=list(result.loss_code),
        handoffs=list(result.handoffs),
    )
    from bf16_migrate.carriers.resolve import named_tree_imports_of

    # the migrated run's own copy: a module that sets the switch for this script goes with its change
    env_modules = frozenset(path.resolve() for _, path in named_tree_imports_of(script, source, home))
    results = migrate_imported_modules(
        [own], lambda p: (read_source(p), "utf-8"), lambda p: home, mode, False, errors, env_modules=env_modules
    )
    if errors:
        raise RunError(f"{script}: a module it imports could not be migrated: {errors[0]}")
    modules: dict[Path, str] = {}
    for module in results:
        if module is own:
            continue
        diagnostics.extend(module.diagnostics)
        if module.f32_islands:
            islands[module.path.resolve()] = list(module.f32_islands)
        if module.new != module.old:
            modules[module.path.resolve()] = module.new
    return modules


def _implied_legacy_env(
    script: Path,
    source: str,
    mode: Mode,
    legacy_env: Mapping[str, str],
    legacy_env_source: Sequence[str],
    *,
    given_legacy: bool,
) -> tuple[Mapping[str, str], Sequence[str], Path | None]:
    """``legacy_env`` and where it came from, with the settings the script is run under without
    naming them: its own ``#!`` line's (``#!/usr/bin/env -S XLA_USE_BF16=1 python3``,
    :mod:`bf16_migrate.python.shebang_env`), and, when nothing else sets one and the script names
    none, a module it imports that sets the switch for its importers (:func:`_env_module_settings`),
    which is returned third (None: none), or else the launchers of its tree that start it with the switch
    (:func:`.launchers.launched_with`: a shell script, a Dockerfile, a job spec, as the codemod reads them).
    Raises :class:`RunError` when those launchers set different settings (or one only on some paths)."""
    own = {s.variable: s.value for s in shebang_settings(source, load_rules()) if s.on}
    if any(name not in legacy_env for name in own):
        legacy_env = {**own, **legacy_env}
        legacy_env_source = [*legacy_env_source, "the script's #! line"]
    if not legacy_env and not given_legacy and not any(name in source for name in LEGACY_VARIABLES):
        imported, module = _env_module_settings(script, source, mode)
        if imported:
            legacy_env = imported
            how = (
                f"{module.parent.name}/__init__.py, which python -m runs before the script"
                if module.name == "__init__.py"
                else f"{module.name}, which the script imports"
            )
            legacy_env_source = [*legacy_env_source, how]
            return legacy_env, legacy_env_source, module
        launched, launches = launched_with(script)
        root = tree_root(script)
        if launched:
            where = ", ".join(s.where(root) for s in launches)
            return launched, [*legacy_env_source, f"{where}, which launches the script"], None
        if launches:
            said = ", ".join(
                f"{s.where(root)} ({' '.join(f'{k}={v}' for k, v in sorted(s.env.items()))}"
                + ("" if s.sure else ", on some paths only")
                + ")"
                for s in launches
            )
            raise RunError(
                f"{script}: the script names no legacy variable and its launchers set different ones: {said}",
                hint="pass --legacy-env with the setting to verify under, or verify the launcher itself",
            )
    return legacy_env, legacy_env_source, None


def _env_module_settings(script: Path, source: str, mode: Mode) -> tuple[dict[str, str], Path]:
    """The legacy settings a module of the script's tree that it imports makes at module level for
    whatever imports it (:attr:`bf16_migrate.python.outcome.Outcome.sets_on_import`: an
    ``env_setup.py``), or in a function the script calls (``setup_env()``), and that module;
    ``({}, script)`` when there is none. The modules are read only when they name a legacy variable."""
    from bf16_migrate.carriers.resolve import named_tree_imports_of
    from bf16_migrate.env_modules import calls_a_setter
    from bf16_migrate.python import ParseError, migrate_source

    package = package_run(script, source)
    home = package.top if package is not None else script.parent
    for path in [*_package_inits(package), *(path for _, path in named_tree_imports_of(script, source, home))]:
        try:
            text = read_source(path)
        except (OSError, RunError):
            continue
        if not any(name in text for name in LEGACY_VARIABLES):
            continue
        try:
            result = migrate_source(text, mode, str(path))
        except (ParseError, ValueError):
            continue
        setters = result.outcome.sets_on_call
        if result.outcome.sets_on_import and (not setters or calls_a_setter(source, setters)):
            return dict(result.outcome.sets_on_import), path
    return {}, script


def _stage_env_module(texts: _Texts, module: Path, mode: Mode, settings: Mapping[str, str], *, migrated: bool) -> None:
    """The runs' copies of an env module (:func:`_implied_legacy_env`): the FP32 runs import it
    without its writes; with ``migrated`` (verify made the migration), the migrated run takes its
    migration when the script's own did not bring it (a package's ``__init__.py``, which no import
    names)."""
    key = module.resolve()
    texts.reference_modules = {key: _migrate(read_source(module), REFERENCE_MODE, module, modules=False)[0]}
    if migrated and key not in texts.modules:
        texts.modules[key] = _env_module_migrated(module, mode, settings)


def _env_module_migrated(module: Path, mode: Mode, settings: Mapping[str, str]) -> str:
    """The migration of an env module (:func:`_env_module_settings`, its ``settings``) whose importer,
    the script, is migrated: its writes replaced as the rewrite replaces them when every importer
    takes the change."""
    from bf16_migrate.python import migrate_source

    text = read_source(module)
    return migrate_source(text, mode, str(module), imported_under=settings, importers_migrated=True).code


def _package_inits(package: PackageRun | None) -> list[Path]:
    """The ``__init__.py`` files ``python -m`` runs before a script of a package (``python -m
    trainpkg.train`` imports ``trainpkg/__init__.py`` first), outermost first; none for a script run
    by its path."""
    if package is None:
        return []
    parts = package.module.split(".")[:-1]
    return [package.top.joinpath(*parts[: i + 1], "__init__.py") for i in range(len(parts))]


def _is_test_module(source: str, script: Path) -> bool:
    """Whether ``script`` is a test module rather than a training script: the rewrite's own
    decision (:func:`bf16_migrate.python.test_or_script.is_test_module`), for a file verify
    starts as a program."""
    from bf16_migrate.python.test_or_script import is_test_module

    return is_test_module(source, str(script), launched=True)


def verify_script(
    script: Path,
    mode: Mode | str = DEFAULT_MODE,
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
    max_steps: int | None = None,
    trace: bool = True,
    trace_time: float = TRACE_TIME,
    migrated_modules: Mapping[Path, str] | None = None,
    previous: VerifyReport | None = None,
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
    checkout's copy of ``script``, run from a working copy of its directory in the checkout, so
    every module it imports is the legacy one; the FP32 reference runs from another working copy
    of that directory; ``PYTHONPATH`` entries
    inside the work tree point into the checkout for both; ``legacy_source`` defaults to the
    checkout's text and ``legacy_label`` to ``checkout.label``. ``legacy_env_source``: where
    ``legacy_env`` came from, for the report. ``max_steps``: the budget of steps for more
    evidence (default ``4 * steps``): when the verdict cannot decide (matches INCONCLUSIVE: the
    control passes the onset check and neither the graphs nor the later steps tell the
    precisions apart), the three runs are made again with ``max_steps`` steps and judged again;
    only then may the verdict stay INCONCLUSIVE (with what to run in its notes). ``trace``: the
    legacy and migrated runs record their dtype trace (:mod:`.trace`), read into findings
    (:mod:`.trace_findings`) and the verdict's ``trace`` part; ``trace_time``: seconds they may go
    on after the recorded steps so that it sees the code after the training loop (0: they stop
    at the steps; a second round of more steps is not traced again). ``migrated_modules``: with
    ``migrated_source``, the migrated texts of modules of the tree to stage beside it (path ->
    text). ``previous``: a report of the same script, mode and settings whose legacy and
    reference runs, migration findings and f32 islands are taken as they are: only the migrated
    run is made again (``verify --fix`` after a repair).

    Runs: the legacy run is the original file unchanged with ``legacy_env`` added; the
    migrated and reference runs are the migrated texts with the legacy variables
    (``XLA_USE_BF16``, ``XLA_DOWNCAST_BF16``, ``XLA_USE_FP16``, ``XLA_DOWNCAST_FP16``) removed
    from the environment; each runs from its own working copy of the script's directory (or its
    package's top), so what a run writes reaches neither the user's tree nor another run
    (:mod:`.workcopy`; details in :mod:`.runner`). What a copy had to link instead of copying is
    said in one of the verdict's notes.

    Returns a :class:`VerifyReport`; ``report.passed`` is the verdict (rules and tolerances
    in :mod:`.compare`). Raises :class:`RunError` when the script is missing or cannot be
    migrated, when the legacy text names no legacy variable while neither ``legacy_env`` nor
    the environment sets one, when the migrated run fails (non-zero exit, timeout, no record,
    zero steps), or
    when no comparison run is usable (the legacy run and the FP32 reference both failed for
    stochastic / gpu-compatible; the reference for amp); ``ValueError`` for an unknown mode.

    Long for its parameters' documentation; the body is phases: the legacy side
    (:func:`_legacy_side`), the texts to run (:func:`_texts`), the runs (:func:`_run`), the
    runs that must have worked (:func:`_raise_unusable`), the verdict (:func:`.compare.judge`,
    or :func:`.outputs.judge_outputs` for a script that does not train) with the registered
    checks' parts (:func:`.checks.ask`: the trace's first), more evidence when it cannot decide
    (:func:`_more_steps`).
    """
    mode = mode if isinstance(mode, Mode) else mode_named(mode)  # the one lookup: verify's API takes a name too
    _check_verifiable(mode, steps)
    started = time.monotonic()
    script = Path(script).resolve()
    source = _script_source(script)
    legacy_env, legacy_env_source, env_module = _implied_legacy_env(
        script, source, mode, legacy_env, legacy_env_source, given_legacy=legacy_source is not None
    )
    base_env = dict(os.environ if env is None else env)
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
        need_reference=run_reference or mode.autocast,
        need_islands=trace and previous is None,
    )
    if migrated_modules is not None:
        texts.modules = {Path(p).resolve(): text for p, text in migrated_modules.items()}
    if env_module is not None:
        _stage_env_module(texts, env_module, mode, legacy_env, migrated=migrated_source is None)
    if previous is not None:
        texts.diagnostics = list(previous.diagnostics)
        texts.islands = dict(previous.islands)
        texts.own = previous.own_migration  # the repairs of `--fix` are verify's own, not a hand's
    args = [str(a) for a in script_args]
    common = dict(base_env=base_env, args=args, steps=steps, timeout=timeout, graphs=graphs)
    trace_after = max(0.0, trace_time) if trace else None
    reused = {name: run for name, run in (previous.runs if previous is not None else {}).items() if name != MIGRATED}
    linked: list[Linked] = []
    runs, device = _run(
        script,
        mode,
        legacy,
        texts,
        legacy_env,
        common,
        python=python,
        jobs=jobs,
        progress=progress,
        trace_after=trace_after,
        only=frozenset({MIGRATED}) if reused else None,
        linked=linked,
    )
    runs = {**reused, **runs}
    runs[MIGRATED].rounding_launcher = _launcher_rounding(mode, legacy, legacy_env_source)
    sources = _trace_sources(script, mode, source, legacy, texts)
    findings = trace_findings(runs, sources)
    try:
        _raise_unusable(mode, runs, findings)
    except RunError as err:
        err.migrated_source, err.modules = texts.migrated, dict(texts.modules)
        raise
    inference = runs[MIGRATED].inference
    on_outputs = runs[MIGRATED].on_outputs  # no losses: judged on what the runs hand the host
    if not inference:
        _control_run(
            script,
            mode,
            legacy,
            texts,
            legacy_env,
            common,
            runs,
            python=python,
            jobs=jobs,
            progress=progress,
            linked=linked,
        )
    allowance = compile_allowance(legacy.source if legacy.source is not None else source, texts.migrated)
    if on_outputs:  # a script that does not train, or trains without backward(): no losses
        judged = judge_outputs if inference else partial(judge_without_backward, graphs=graphs, allowance=allowance)
        verdict = judged(mode, runs, sources)
        if _autocast_control_run(
            script, legacy, texts, common, runs, verdict, python=python, progress=progress, linked=linked
        ):
            verdict = judged(mode, runs, sources)
            findings = trace_findings(runs, sources)  # the control's loss tells a bf16 loss's (BFM206)
        verdict.notes.extend(texts.notes)
    else:
        verdict = _judged(mode, runs, texts, steps, graphs=graphs, device=device, allowance=allowance)
        if _autocast_control_run(
            script, legacy, texts, common, runs, verdict, python=python, progress=progress, linked=linked
        ):
            verdict = _judged(mode, runs, texts, steps, graphs=graphs, device=device, allowance=allowance)
            findings = trace_findings(runs, sources)  # the control's loss tells a bf16 loss's (BFM206)
        verdict = judge_after_host_training(mode, runs, sources, verdict)
    unseen = _unseen(runs, sources)
    checks.ask(CheckInput(verdict, runs, findings, trace_asked=trace_after is not None, unseen=unseen))
    traced_runs = runs
    rounds = [steps]
    budget = 4 * steps if max_steps is None else max_steps
    if verdict.status == INCONCLUSIVE and not on_outputs:  # more steps tell host outputs nothing new
        why = _more_steps(verdict, runs, steps, budget)
        if why is None:
            if progress is not None:
                progress.again(budget, f"the first {steps} steps cannot tell the precisions apart")
            common["steps"] = budget
            runs, device = _run(
                script, mode, legacy, texts, legacy_env, common, python=python, jobs=jobs, progress=progress
            )
            _raise_unusable(mode, runs)
            _control_run(
                script, mode, legacy, texts, legacy_env, common, runs, python=python, jobs=jobs, progress=progress
            )
            verdict = _judged(mode, runs, texts, budget, graphs=graphs, device=device, allowance=allowance)
            if _autocast_control_run(script, legacy, texts, common, runs, verdict, python=python, progress=progress):
                verdict = _judged(mode, runs, texts, budget, graphs=graphs, device=device, allowance=allowance)
            # the first round's trace: the second is not traced again
            checks.ask(CheckInput(verdict, runs, findings, traced_runs=traced_runs, unseen=unseen))
            rounds.append(budget)
            verdict.notes.insert(
                0,
                f"The first {steps} steps could not tell the precisions apart; verify made the three runs again with "
                f"{budget} steps, its budget for more evidence (--max-steps).",
            )
            why = f"{budget} steps, the budget, did not tell them apart either"
        matches = verdict.part("matches")
        if verdict.status == INCONCLUSIVE and matches is not None and matches.status == INCONCLUSIVE:
            verdict.notes.append(_what_to_run(why, script, rounds[-1], verdict))  # the trace's says its own
    note = linked_note(linked)
    if note is not None:
        verdict.notes.append(note)
    return VerifyReport(
        script=script,
        mode=mode,
        steps=rounds[-1],
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
        rounds=rounds,
        trace_findings=findings,
        modules=dict(texts.modules),
        islands=dict(texts.islands),
        own_migration=texts.own,
    )


def _check_verifiable(mode: Mode, steps: int) -> None:
    """Raise ``ValueError`` when ``mode`` cannot be verified (no ``[MODE.verify]`` in
    rules/modes.toml) or ``steps`` is below 1."""
    if not mode.verify:
        raise ValueError(
            f"mode {mode.name!r} cannot be verified (no [{mode}.verify] in rules/modes.toml); "
            f"choose one of {', '.join(TOLERANCES)}"
        )
    if steps < 1:
        raise ValueError("steps must be at least 1")


def _script_source(script: Path) -> str:
    """The text of ``script`` (a resolved path; :func:`.runner.read_source`). Raises
    :class:`RunError` when it is no file or cannot be read."""
    if not script.is_file():
        raise RunError(f"{script}: no such script")
    try:
        return read_source(script)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise RunError(f"{script}: cannot be read: {exc}") from exc


def _judged(
    mode: Mode,
    runs: Mapping[str, RunRecord],
    texts: _Texts,
    requested_steps: int,
    *,
    graphs: bool,
    device: str,
    allowance: Sequence[Allowance],
) -> Verdict:
    """The verdict of a training run (:func:`.compare.judge`) with what the migration's texts say
    of it: the f32 it keeps on purpose and its notes."""
    verdict = judge(
        mode,
        runs,
        requested_steps=requested_steps,
        graphs=graphs,
        device=device,
        allowance=allowance,
        kept_f32=texts.kept_f32,
        loss_f32=texts.loss_f32,
    )
    verdict.notes.extend(texts.notes)
    return verdict


def _trace_sources(script: Path, mode: Mode, source: str, legacy: _Legacy, texts: _Texts) -> TraceSources:
    """What the trace findings need to place the runs' lines in the user's files (the files as
    they are on disk): the migrated script's and modules' texts, the legacy text where it is not
    the user's file (``--against``: the checkout's), the deliberate f32 islands."""
    cache: dict[str, str | None] = {str(script): source}

    def user_text(path: str) -> str | None:
        if path not in cache:
            try:
                cache[path] = read_source(Path(path))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                cache[path] = None
        return cache[path]

    migrated = {str(script): texts.migrated}
    migrated.update({str(path): text for path, text in texts.modules.items()})
    legacy_texts: dict[str, str] = {}
    if legacy.source is not None:
        legacy_texts[str(script)] = legacy.source
    run_texts = {MIGRATED: migrated, LEGACY: legacy_texts}
    if texts.reference is not None:
        run_texts[REFERENCE] = {str(script): texts.reference}
        run_texts[AUTOCAST] = run_texts[REFERENCE]  # the autocast control runs the FP32 reference's text
    sources = TraceSources(
        user_text,
        run_texts,
        f32=mode.casts_model,
        f64=not mode.casts_model,
        own_migration=texts.own,
        codemod_lines=texts.codemod_lines,
    )
    checkout = legacy.checkout
    if checkout is not None:

        def legacy_text(path: str) -> str | None:
            try:
                return read_source(checkout.path_for(Path(path)))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                return None

        sources.run_readers[LEGACY] = legacy_text
    for path, islands in texts.islands.items():
        own: str | None
        if path == script.resolve():  # the migration read the legacy text
            key, own = str(script), legacy.source if legacy.source is not None else source
        else:  # a module, as it is on disk
            key = str(path)
            own = user_text(key)
        sources.islands[key] = island_spans(islands, own, user_text(key))
    return sources


def _more_steps(verdict: Verdict, runs: Mapping[str, RunRecord], steps: int, budget: int) -> str | None:
    """None when more steps may decide an INCONCLUSIVE verdict: matches could not decide, the
    runs made every step asked for (a script that ended sooner would end there again) and the
    budget is larger; else why not."""
    matches = verdict.part("matches")
    if matches is None or matches.status != INCONCLUSIVE:
        return "more steps do not help the part that could not decide"
    if matches.figures.get("onset_like_control"):
        return "the first steps differ as the FP32 reference's do, and more steps do not change the first ones"
    made = min(r.steps for r in runs.values() if r.ok)
    if made < steps:
        return f"the script ended after {made} of the {steps} steps asked for, so more steps cannot be made"
    if budget <= steps:
        return f"the budget for more steps (--max-steps {budget}) is no larger than --steps {steps}"
    return None


def _what_to_run(why: str, script: Path, steps: int, verdict: Verdict | None = None) -> str:
    """The note of a verdict that stays INCONCLUSIVE: why, and what to run (or compare)."""
    matches = verdict.part("matches") if verdict is not None else None
    if matches is not None and matches.figures.get("onset_like_control"):
        return (
            f"INCONCLUSIVE (exit 3): {why}. The graphs show bf16 where the legacy run had it; what to compare: the "
            f"files and numbers {script.name} writes at its end, legacy against migrated."
        )
    return (
        f"INCONCLUSIVE (exit 3): {why}. The losses of this script cannot tell bf16 from FP32 over {steps} steps, and "
        "the graphs could not either. What to run: a longer verify, bf16-migrate verify "
        f"{script.name} --steps {2 * steps} --max-steps {8 * steps} (give the script a run at least that long after "
        "`--` when it stops sooner), or compare the curves yourself with --plot."
    )


@dataclass
class _Legacy:
    """The legacy side of a verify: ``file``, the checkout's copy of the script, run from a
    working copy of its directory (None: the script itself, or ``source``, each in its copy);
    ``source``, its text when it is not the script's (None: the script is the legacy file);
    ``label``, where it came from;
    ``base_env``, the environment its runs start from (``PYTHONPATH`` mapped into the
    checkout); ``checkout``."""

    file: Path | None
    source: str | None
    label: str | None
    base_env: dict[str, str]
    checkout: Any = None


def _launcher_rounding(mode: Mode, legacy: _Legacy, legacy_env_source: Sequence[str]) -> str | None:
    """Under ``--against`` in a mode that switches stochastic rounding on, where the legacy run's switch came from
    launchers (``legacy_env_source``: their ``path:line``, relative to the repository's top): ``"1"`` when one of
    them, as the work tree has it, names ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` (read as setting it: a launcher's
    forms are many, and naming it is what the migration of the launcher writes), else ``""``; None otherwise. A
    hand-made migration that dropped the variable from the launcher PASSed (bench/unseen/hunt35 sr_launcher): on
    Neuron it trains with round-to-nearest bf16."""
    checkout = legacy.checkout
    if not mode.stochastic_rounding or checkout is None:
        return None
    named = re.compile(rf"(?<![A-Za-z0-9_]){STOCHASTIC_ROUNDING_VAR}(?![A-Za-z0-9_])".encode())
    read = False
    for where in legacy_env_source:
        path_text, _, line = where.rpartition(":")
        if not path_text or not line.isdigit():
            continue  # `--legacy-env`, "its own writes": no launcher
        try:
            data = (checkout.work_root / path_text).read_bytes()
        except OSError:
            continue
        read = True
        if named.search(data):
            return "1"
    return "" if read else None


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
    modules: dict[Path, str] = field(default_factory=dict)
    """The migrated modules of the tree staged beside the migrated script (:func:`_migrated_modules`)."""
    kept_f32: bool = False
    """The migration keeps f32 the script asks for (``Outcome.kept_f32``, BFM088/BFM089):
    :func:`.compare.judge` judges the losses by their drift."""
    loss_f32: bool = False
    """Among it, the loss: :func:`.compare.judge` accepts an f32 loss."""
    notes: list[str] = field(default_factory=list)
    """Said with the verdict: why f32 the codemod would keep is judged as any f32 here."""
    islands: dict[Path, list[Any]] = field(default_factory=dict)
    """The deliberate f32 islands the migration of the legacy text kept, by file, in the lines of
    the legacy text (:func:`_migrate`): the dtype trace does not count them."""
    own: bool = True
    """The migrated text is the codemod's own migration of the legacy text: its islands and the lines where
    it wrote ``float32`` excuse f32 (:class:`.trace_findings.TraceSources`). In a text that differs (by hand,
    or edited after the migration) only the islands whose lines are the codemod's, line for line
    (:func:`.trace_findings.same_lines`), and the lines the codemod wrote as they are (``codemod_lines``)
    do: an f32 GELU put on an island line PASSed (bench/unseen/hunt23 TC4b), and a comment added at the top
    of the codemod's text lost every excuse (hunt25 TCP1)."""
    codemod_lines: frozenset[str] = frozenset()
    """The codemod's migration of the legacy text, its lines stripped (for a text that is not it)."""
    reference_modules: dict[Path, str] = field(default_factory=dict)
    """The modules of the tree staged beside the FP32 reference (and amp's autocast control): a
    module that sets the switch for its importers, its writes removed (:func:`_implied_legacy_env`)."""


def _texts(
    script: Path,
    mode: Mode,
    source: str,
    legacy_source: str | None,
    legacy_env: Mapping[str, str],
    base_env: Mapping[str, str],
    migrated_source: str | None,
    reference_source: str | None,
    *,
    need_reference: bool,
    need_islands: bool = False,
) -> _Texts:
    """The migrated text (the codemod's, or the work tree's when ``legacy_source`` is given)
    and the reference text (the legacy text migrated in ``"reference"`` mode). Raises
    :class:`RunError` when nothing names a legacy variable, the codemod cannot migrate, or the
    script sets no legacy variable and none is given (:func:`.migration.refuse_nothing_to_verify`:
    an already-migrated script, with the ``--against REV`` to run). ``need_islands``: the
    deliberate f32 islands are wanted even when the migrated text is given (the codemod then runs
    on the legacy text for them alone)."""
    diagnostics: list[Any] = []
    modules: dict[Path, str] = {}
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
    if migrated_source is None and _is_test_module(legacy_text, script):
        raise RunError(
            f"{script}: a test module (it collects tests, or has no entry point and training loop of its own): "
            "tests are not migrated, so there is nothing to verify",
            hint="verify the training script the test exercises; a script that only has a test's name is verified",
        )
    flag: str | None = None
    kept_f32 = loss_f32 = False
    notes: list[str] = []
    reference_modules: dict[Path, str] = {}
    islands: dict[Path, list[Any]] | None = None
    own = migrated_source is None
    codemod_lines: frozenset[str] = frozenset()
    if migrated_source is None:
        if legacy_source is None:
            migrated_source, diagnostics, flag, modules, kept_f32, loss_f32, islands, refusals = _migrate(
                source, mode, script, launched_with=legacy_env
            )
            if not inherited:
                refuse_nothing_to_verify(script, source, migrated_source, legacy_env, refusals)
        else:
            if not inherited:  # `--against REV`: a revision that sets nothing ran FP32
                refuse_unswitched_revision(script, legacy_text, legacy_env, "the legacy revision")
            migrated_source = source
            # the codemod's reading of the legacy script: amp through its own flag (the script unchanged
            # under its launcher's setting), f32 it keeps on purpose
            legacy_read = _migrate(legacy_text, mode, script, launched_with=legacy_env, modules=False)
            kept_f32, loss_f32, notes = _kept_f32_of(legacy_read, migrated_source)
            own = legacy_read.code == migrated_source
            if mode.autocast and legacy_env and migrated_source == legacy_source:
                flag = legacy_read.flag
    if need_reference and reference_source is None:
        # the FP32 reference is the legacy text as the switch's launcher ran it: a float64 the switch made
        # low precision becomes float32 there too (a launcher's f64 class weights met f32 logits otherwise)
        reference_source = _migrate(legacy_text, REFERENCE_MODE, script, launched_with=legacy_env, modules=False)[0]
        reference_modules = _entry_reference(legacy_text, script, mode)
    if islands is None and need_islands:
        try:
            read = _migrate(legacy_text, mode, script, launched_with=legacy_env)
            own = own or read.code == migrated_source
            if own:
                islands = read.islands
            else:  # a hand-made text: the islands it kept as the codemod wrote them, line for line
                key = script.resolve()
                kept = [i for i in read.islands.get(key, []) if same_lines(i, legacy_text, read.code, migrated_source)]
                islands = {key: kept} if kept else {}
                codemod_lines = frozenset(line.strip() for line in read.code.splitlines())
        except (RunError, ValueError):
            islands = {}
    return _Texts(
        migrated_source,
        reference_source if need_reference else None,
        diagnostics,
        [flag] if flag else [],
        modules,
        kept_f32,
        loss_f32,
        notes,
        islands or {},
        own=own,
        codemod_lines=codemod_lines,
        reference_modules=reference_modules if need_reference else {},
    )


def _entry_reference(source: str, script: Path, mode: Mode) -> dict[Path, str]:
    """The FP32 reference run's copy of the module an entry script hands its training to
    (:func:`_handed_over`): that module as the reference migration makes it under the entry's settings
    (a float64 the switch made low precision is float32 there too); empty for any other script. The
    entry is read as ``mode``'s migration reads it (the reference mode drops any write)."""
    from bf16_migrate.python import migrate_source

    if not any(name in source for name in LEGACY_VARIABLES):
        return {}
    try:
        result = migrate_source(source, mode, str(script))
    except Exception:  # the script's own migration reports what does not parse
        return {}
    if result.legacy_env or not result.outcome.sets_on_import:
        return {}
    package = package_run(script, source)
    root = package.top if package is not None else script.parent
    handed = _handed_over(source, REFERENCE_MODE, script, dict(result.outcome.sets_on_import), root)
    return dict(handed.modules) if handed is not None else {}


def _kept_f32_of(legacy_read: _Migrated, migrated: str) -> tuple[bool, bool, list[str]]:
    """Whether the judge may take the f32 the codemod keeps in the legacy script
    (``legacy_read``: BFM088/BFM089) as the script's own choice in ``migrated``, the work tree's
    text: only when ``migrated`` is the codemod's migration itself. Any other text (a hand
    migration, a later edit) is judged as any f32: the onset check and the loss's dtype apply,
    because those two are what FAIL a migration that leaves an input f32 (measured over
    bench/results/calibration.json: judged as if they kept f32 on purpose, three wrong
    ``input_f32`` migrations PASS, bench/RESULTS.md). Returns ``(kept_f32, loss_f32, notes)``."""
    if not legacy_read.kept_f32:
        return False, False, []
    if migrated == legacy_read.code:
        return True, legacy_read.loss_f32, []
    return (
        False,
        False,
        [
            "The codemod keeps f32 this script asks for (BFM088/BFM089), but the migrated text is not the codemod's "
            "migration of the legacy text: its f32 is judged as any f32 (the first steps must match, the loss must "
            "be bf16). Verify the codemod's own migration to have the kept f32 judged by its drift alone."
        ],
    )


def _run(
    script: Path,
    mode: Mode,
    legacy: _Legacy,
    texts: _Texts,
    legacy_env: Mapping[str, str],
    common: dict[str, Any],
    *,
    python: str,
    jobs: int | None,
    progress: Progress | None,
    trace_after: float | None = None,
    only: frozenset[str] | None = None,
    linked: list[Linked] | None = None,
) -> tuple[dict[str, RunRecord], str]:
    """Make the runs (:mod:`.runner`) in a temporary workspace, each from its own working copy
    (:mod:`.workcopy`): the migrated text, the legacy file (the checkout's, or the script, or the
    legacy text given) and the FP32 reference; returns the records by run name and the
    ``PJRT_DEVICE`` they used. ``trace_after``: the legacy and migrated runs record their dtype
    trace and may go on that many seconds after the recorded steps (None: no trace). ``only``: the
    names of the runs to make (None: all). What the copies link instead of copying is appended to
    ``linked``."""
    f32 = mode.casts_model
    master_weights = mode.master_weights  # its optimizer steps on FP32 master weights
    with Workspace() as ws:
        staged = ws.root / MIGRATED
        run = _stage(texts.migrated, script, staged, texts.modules, linked)
        migrated_spec = ws.spec(
            MIGRATED,
            run.script,
            script,
            drop=LEGACY_VARIABLES,
            trace=None
            if trace_after is None
            else TraceSpec(f32, (staged, run.home), trace_after, master_weights, not f32),
            module=run.module,
            cwd=run.cwd,
            **{**common, "args": [*common["args"], *texts.migrated_args]},
        )
        migrated_spec.trace_paths[str(staged)] = str(run.home)
        legacy_common = {**common, "base_env": legacy.base_env}
        checkout = legacy.checkout
        legacy_dir = ws.root / LEGACY
        # the legacy text in its own copy: the checkout's file as it is (its directory copied, so the
        # runs of several scripts share no file there), the script as it is, or the legacy text given
        legacy_origin = legacy.file if legacy.file is not None else script
        legacy_stage = _stage(
            None if legacy.file is not None else legacy.source, legacy_origin, legacy_dir, None, linked
        )
        legacy_trace = (
            None if trace_after is None else TraceSpec(f32, (legacy_dir, legacy_stage.home), trace_after, f64=not f32)
        )
        legacy_spec = ws.spec(
            LEGACY,
            legacy_stage.script,
            legacy_origin,
            add=dict(legacy_env),
            trace=legacy_trace,
            module=legacy_stage.module,
            cwd=legacy_stage.cwd,
            **legacy_common,
        )
        if legacy.file is not None or legacy.source is None:  # a copy of the file as it is: shown as the file
            legacy_spec.aliases = {
                str(legacy_stage.script): str(legacy_origin),
                str(legacy_dir): str(legacy_stage.home),
            }
        if checkout is not None:  # the trace's files read as the work tree's, the output's as the revision's
            legacy_spec.trace_paths[str(legacy_dir)] = str(checkout.work_path(legacy_stage.home))
            legacy_spec.trace_paths[str(checkout.tree)] = str(checkout.work_root)
            legacy_spec.aliases[str(checkout.tree)] = f"[{checkout.label}]"
        else:
            legacy_spec.trace_paths[str(legacy_dir)] = str(legacy_stage.home)
        specs = [migrated_spec, legacy_spec]
        if texts.reference is not None and (only is None or REFERENCE in only):
            reference_dir = ws.root / REFERENCE
            reference_run = _stage(texts.reference, legacy_origin, reference_dir, texts.reference_modules, linked)
            # its host outputs (exits only, no time after the steps): the bar of a script that does not train
            # amp: and the bf16 it makes by hand (a downcast on a line of the legacy text is the migration's
            # where this run, that text without the switch, made none there: trace_findings)
            reference_trace = (
                None if trace_after is None else TraceSpec(False, (reference_dir,), 0.0, f64=mode.autocast)
            )
            reference_spec = ws.spec(
                REFERENCE,
                reference_run.script,
                legacy_origin,
                drop=LEGACY_VARIABLES,
                add={FP32_ENV: "1"},  # FP32 whatever the script autocasts itself
                trace=reference_trace,
                module=reference_run.module,
                cwd=reference_run.cwd,
                **legacy_common,
            )
            if reference_trace is not None:
                reference_spec.trace_paths[str(reference_dir)] = str(_stage_home(script, reference_run))
            if legacy.file is not None:
                reference_spec.aliases[str(checkout.tree)] = f"[{checkout.label}]"
            # amp needs the reference more than the legacy run: start it first.
            specs.insert(1 if mode.autocast else 2, reference_spec)
        if only is not None:
            specs = [spec for spec in specs if spec.name in only]
        device = migrated_spec.env.get("PJRT_DEVICE", "CPU")
        runs = run_specs(specs, python=python, jobs=default_jobs(device) if jobs is None else jobs, progress=progress)
    return runs, device


class _Staged(NamedTuple):
    """A text staged to run (:func:`_stage`): the script to run, the module to run instead (a
    script of a package, :mod:`.package`; None: by its path), the working directory (the run's own
    copy), and the user's directory the staged one stands for (the script's, or its package's
    top)."""

    script: Path
    module: str | None
    cwd: Path
    home: Path


def _stage(
    text: str | None,
    origin: Path,
    dest: Path,
    modules: Mapping[Path, str] | None = None,
    linked: list[Linked] | None = None,
) -> _Staged:
    """Stage ``text`` (None: ``origin`` as it is) in place of ``origin`` in ``dest``, the run's own
    working copy (:mod:`.workcopy`), with ``modules`` (the migrated modules of its tree): a copy of
    its directory (:func:`.runner.stage_script`), or, for a script of a package that imports it, a
    copy of the tree that holds the package, run as ``python -m`` from there (:mod:`.package`).
    The run's working directory is ``dest``; what the copy links instead of copying is appended to
    ``linked``."""
    package = package_run(origin, text if text is not None else read_source(origin))
    if package is None:
        return _Staged(stage_script(text, origin, dest, modules, linked=linked), None, dest, origin.parent)
    script = stage_package(text, origin, package, dest, modules, linked=linked)
    return _Staged(script, package.module, dest, package.top)


def _stage_home(script: Path, run: _Staged) -> Path:
    """The user's directory a staged run's directory stands for."""
    return run.home if run.module is not None else script.parent


def _control_run(
    script: Path,
    mode: Mode,
    legacy: _Legacy,
    texts: _Texts,
    legacy_env: Mapping[str, str],
    common: dict[str, Any],
    runs: dict[str, RunRecord],
    *,
    python: str,
    jobs: int | None,
    progress: Progress | None,
    linked: list[Linked] | None = None,
) -> None:
    """When the legacy run of a bf16 mode (stochastic, gpu-compatible) is unusable and the FP32
    reference is, add ``runs["control"]``: a plain full-bf16 run of the script (its stochastic
    rewrite, :func:`bf16_migrate.python.migrate_source`), whose distance from the FP32 reference
    is the bar the migrated run is held to in the same verify (:data:`.compare.FALLBACK`). When
    the migrated text is that rewrite, the migrated run is the control (no run is made). Nothing
    is added when the rewrite cannot be made; the verdict then says the bar is missing."""
    if mode.autocast or usable(runs.get(LEGACY)) or not usable(runs.get(REFERENCE)):
        return
    legacy_text = legacy.source if legacy.source is not None else read_source(script)
    origin = legacy.file if legacy.file is not None else script
    try:
        control = _migrate(legacy_text, _plain_bf16_mode(), origin, launched_with=legacy_env)[0]
    except (RunError, ValueError):
        return
    if control == legacy_text:
        return
    if control == texts.migrated:
        runs[CONTROL] = dataclasses.replace(runs[MIGRATED], name=CONTROL)
        return
    if CONTROL in runs:  # made for an earlier migrated text (verify --fix): the same control
        return
    runs.update(_one_run(CONTROL, control, origin, legacy, common, python=python, progress=progress, linked=linked))


def _autocast_control_run(
    script: Path,
    legacy: _Legacy,
    texts: _Texts,
    common: dict[str, Any],
    runs: dict[str, RunRecord],
    verdict: Verdict,
    *,
    python: str,
    progress: Progress | None,
    linked: list[Linked] | None = None,
) -> bool:
    """amp: when matches FAILed against the FP32 reference (a training run's losses, or an inference
    run's host outputs: :mod:`.outputs`), or precision FAILed (``verdict``), add
    ``runs["autocast"]``, the autocast control (:data:`.records.AUTOCAST`): the FP32 reference's
    text run with autocast on for its forward passes and losses, which matches may then hold the
    migrated run to, and whose step graph tells the matmuls autocast itself leaves in f32
    (:func:`.compare.judge`). Made only then: a right migration that passes against the FP32
    reference costs no run. Returns whether the run was made (the verdict is then to be judged
    again)."""
    failed = {part.name for part in verdict.parts if part.status == FAIL}
    tol = verdict.tolerance or TOLERANCES.get(verdict.mode.name)  # an inference verdict has no loss tolerance
    if not failed & {"matches", "precision"} or tol is None or tol.autocast_control is None:
        return False
    if AUTOCAST in runs or texts.reference is None or not usable(runs.get(REFERENCE)):
        return False
    origin = legacy.file if legacy.file is not None else script
    add = {AUTOCAST_ENV: "bfloat16"}
    # an inference run is judged on its host outputs: the control's are traced, as the reference's are
    outputs_of = script if runs[MIGRATED].on_outputs else None
    runs.update(
        _one_run(
            AUTOCAST,
            texts.reference,
            origin,
            legacy,
            common,
            python=python,
            progress=progress,
            add=add,
            linked=linked,
            outputs_of=outputs_of,
            modules=texts.reference_modules,
        )
    )
    return True


def _one_run(
    name: str,
    text: str,
    origin: Path,
    legacy: _Legacy,
    common: dict[str, Any],
    *,
    python: str,
    progress: Progress | None,
    add: Mapping[str, str] | None = None,
    linked: list[Linked] | None = None,
    outputs_of: Path | None = None,
    modules: Mapping[Path, str] | None = None,
) -> dict[str, RunRecord]:
    """One more run, made after the first ones (a control): ``text`` staged in place of ``origin``
    in its own working copy (:func:`_stage`, what it links appended to ``linked``), without the
    legacy variables, with ``add`` in its environment; its record by name. ``outputs_of``: the
    user's script, whose host outputs the run records (as the FP32 reference's are, for a script
    that does not train); None: no trace."""
    with Workspace() as ws:
        staged = ws.root / name
        run = _stage(text, origin, staged, modules, linked)
        spec = ws.spec(
            name,
            run.script,
            origin,
            drop=LEGACY_VARIABLES,
            add=add,
            trace=None if outputs_of is None else TraceSpec(False, (staged,), 0.0),
            module=run.module,
            cwd=run.cwd,
            **{**common, "base_env": legacy.base_env},
        )
        if outputs_of is not None:
            spec.trace_paths[str(staged)] = str(_stage_home(outputs_of, run))
        return run_specs([spec], python=python, jobs=1, progress=progress)


def _raise_unusable(mode: Mode, runs: dict[str, RunRecord], findings: Sequence[TraceFinding] = ()) -> None:
    """Raise :class:`RunError` (carrying the runs and the trace's ``findings``) when the migrated
    run failed, or when no comparison run is usable (the FP32 reference for amp; the legacy run
    and its fallback, the reference, for the other modes)."""
    migrated = runs[MIGRATED]
    legacy = runs.get(LEGACY)
    reference = runs.get(REFERENCE)
    if not migrated.ok:
        err = migrated.as_error()
        err.findings = list(findings)
        if legacy is not None:
            err.broke = legacy.ok
            err.message += (
                " (the legacy run succeeded: the migration broke the script)"
                if legacy.ok
                else f" (the legacy run failed too: {legacy.error})"
            )
            err.args = (err.message,)
        err.runs = dict(runs)
        raise err
    failure: RunError | None = None
    for name in (REFERENCE, CONTROL):
        fp32 = runs.get(name)
        switched = {k: v for k, v in (fp32.legacy_env or {}).items() if is_truthy(v)} if fp32 is not None else {}
        if fp32 is not None and fp32.ok and switched:
            # the switch reached a run meant to be FP32 (a module of the script that sets it, a sitecustomize):
            # every comparison with it would be void
            where = "; ".join(
                f"{k}={v} set at {fp32.legacy_env_origin.get(k, 'outside Python')}" for k, v in switched.items()
            )
            failure = RunError(
                f"the {name} run, meant to run without the legacy switch, ran under it ({where}): verify cannot "
                "compare with it",
                run=name,
                hint="the code that sets it is outside what verify migrates: migrate it (`bf16-migrate DIR`) and "
                "verify the tree, or give the legacy setting with --legacy-env and remove that write by hand",
            )
    if failure is not None:
        failure.runs = dict(runs)
        failure.findings = list(findings)
        raise failure
    if mode.autocast:
        if reference is None or not reference.ok:
            failure = reference.as_error() if reference is not None else RunError("the FP32 reference run did not run")
    elif (legacy is None or not legacy.ok) and (reference is None or not reference.ok):
        failure = legacy.as_error() if legacy is not None else RunError("the legacy run did not run")
        if reference is not None and reference.error:
            failure.message += f" (and the FP32 reference, the fallback, failed too: {reference.error})"
            failure.args = (failure.message,)
    if failure is not None:
        failure.runs = dict(runs)
        failure.findings = list(findings)
        _condemned_by_the_trace(failure, runs, findings)
        raise failure


def _unseen(runs: Mapping[str, RunRecord], sources: TraceSources) -> list[Unseen]:
    """The migration's changed statements the traced migrated run never executed (:func:`.unseen.unseen_changes`);
    none without the migrated run's trace."""
    migrated = runs.get(MIGRATED)
    trace = migrated.trace if migrated is not None else None
    if trace is None or not trace.lines_run:
        return []
    texts = texts_run(sources.run_texts.get(MIGRATED, {}), lambda path: sources.run_text(LEGACY, path))
    return unseen_changes(trace, texts)


def _condemned_by_the_trace(failure: RunError, runs: Mapping[str, RunRecord], findings: Sequence[TraceFinding]) -> None:
    """Mark ``failure`` (no comparison run usable) a failed check when the migrated and legacy runs both ran and
    the migrated run's dtype trace names places it does what the legacy run did not (the ``trace`` part FAILs:
    :func:`.trace_findings.trace_part`): that part compares the migrated run with the legacy one and needs no FP32
    reference, so the verdict is FAIL, not "cannot judge" (an FP32 reference failing on the float64 the migrated
    run computes in, where the legacy run had bf16: a hunt's)."""
    legacy = runs.get(LEGACY)
    if legacy is None or not legacy.ok or not runs[MIGRATED].ok:
        return
    part = trace_part(findings, runs)
    if part is None or part.passed:
        return
    failure.broke = True
    failure.fail_reason = f"the migrated run's dtype trace: {part.detail}"
    failure.message += (
        "; the trace needs no comparison run: it compares the migrated run with the legacy one, which both ran"
    )
    failure.args = (failure.message,)


def _plain_bf16_mode() -> Mode:
    """The mode whose rewrite is the control run's: plain full bf16, the model cast without FP32
    master weights or autocast (the first such mode of ``rules/modes.toml``). Raises
    ValueError when the rules hold none."""
    for mode in all_modes():
        if mode.casts_model and not mode.master_weights and not mode.autocast:
            return mode
    raise ValueError("rules/modes.toml has no mode that casts the model without master weights or autocast")
