"""Verify at the level people migrate: every script a migration commit changed, one table.

``bf16-migrate verify --against REV`` (no script) plans one :class:`Job` per Python script
whose migration changed between REV and the work tree, and per distinct legacy setting the
launchers at REV gave it; :func:`run_jobs` verifies them (:func:`bf16_migrate.verify.
verify_script`, legacy side from a :class:`~.gitrev.Checkout` of REV); :func:`summary_table`
and :func:`tree_dict` give one table, one JSON document and one exit code
(:func:`exit_code`); :func:`merge_documents` does the same for ``--json`` files written by
separate runs (a CI matrix built from ``--list``).

Which scripts (:func:`plan_tree`): a *legacy script* at REV is a Python file that a launcher
of the tree at REV starts with a legacy variable switched on (:mod:`.launchers`), or whose
text names one and which the codemod, given those settings, treats as the script that ran under
the switch (its result carries the settings in force: a module that only reads the variable
is not one; it is verified through the scripts that import it). A legacy script is verified
when, between REV and the work tree (``git diff --name-only REV``), it changed, one of its
launchers changed, or a module of the tree it imports (followed through ``import``
statements, :func:`bf16_migrate.carriers.resolve.tree_imports`) changed.

Which settings (:func:`plan_script`): ``--legacy-env`` when given; else each distinct set of
legacy variables the launchers at REV put in force for the script (``run.sh`` exports
``XLA_DOWNCAST_BF16=1``, the ``Dockerfile`` sets ``XLA_USE_BF16=1``: two jobs); none when the
script sets its own. Launches that switch nothing on are named in a note (the migrated script
computes in bf16 there too), and so are settings made on some paths only.

Which arguments: those after ``--`` when given (every script's); else, for each setting, the
words of the launch line at REV that gives it (``python train.py --steps 30``: ``--steps 30``;
a launch whose arguments are computed when it runs is not guessed). ``--list`` carries them
(``args``, ``args_source``) and puts them after ``--`` in each entry's ``command``.

Which mode: ``--mode`` when given; else the mode whose codemod output equals the work tree's
text (the migration was the tool's, untouched), else read from what the migration added: the
modes' marks (:func:`detect_mode`).
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as _FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..carriers.resolve import tree_imports
from ..rules import Mode, all_modes, is_truthy
from ..scan import scan
from .jobs import Job, Outcome, VerifyJob
from .launchers import LaunchSetting, launch_settings, settings_for
from .records import RunError
from .runner import LEGACY_VARIABLES, read_source, stop_all
from .summary import TREE_SCHEMA, _env_text, exit_code, merge_documents, summary_table, tree_dict

if TYPE_CHECKING:
    from ..python import TreeFacts

__all__ = [
    "TREE_SCHEMA",
    "Job",
    "Outcome",
    "detect_mode",
    "plan_script",
    "plan_tree",
    "run_jobs",
    "summary_table",
    "tree_dict",
    "exit_code",
    "merge_documents",
    "list_entries",
]


# -- planning ----------------------------------------------------------------------------------


def _on(env: Mapping[str, str]) -> dict[str, str]:
    """The settings of ``env`` that switch something on (``XLA_USE_BF16=0`` is off)."""
    return {k: v for k, v in env.items() if k in LEGACY_VARIABLES and is_truthy(v)}


def detect_mode(
    legacy_text: str,
    migrated_text: str,
    path: str,
    launched_with: Mapping[str, str] | None = None,
    tree: TreeFacts | None = None,
) -> tuple[Mode, str]:
    """The migration mode of ``migrated_text`` (a migration of ``legacy_text``), and how it was
    told: ``"codemod output"`` when the codemod in that mode gives exactly that text, else
    ``"read from the migrated text"``: the modes are asked what their migrations write
    (:attr:`bf16_migrate.rules.Mode.marks`), and the mode is the one whose marks account for every
    mark the text added to the legacy one with the fewest of its own missing (the first of the
    rules on a tie, or when the text added none). ``tree``: what the legacy tree's modules offer
    the script (:func:`tree_facts`)."""
    from ..python import migrate_source

    modes = all_modes()
    for mode in modes:
        try:
            migrated = migrate_source(legacy_text, mode, path, launched_with=launched_with or None, tree=tree)
            if migrated.code == migrated_text:
                return mode, "codemod output"
        except Exception:  # a text the codemod cannot take: read the marks instead
            break
    return _mode_by_marks(legacy_text, migrated_text, modes), "read from the migrated text"


def _mode_by_marks(legacy_text: str, migrated_text: str, modes: Sequence[Mode]) -> Mode:
    """The mode of :func:`detect_mode` read from the marks ``migrated_text`` adds to ``legacy_text``."""
    marks = {mark for mode in modes for mark in mode.marks}
    added = {mark for mark in marks if migrated_text.count(mark) > legacy_text.count(mark)}
    if not added:
        return modes[0]
    accounting = [mode for mode in modes if added <= mode.marks]
    if accounting:
        return min(accounting, key=lambda mode: len(mode.marks - added))
    return max(modes, key=lambda mode: len(mode.marks & added))


def tree_facts(legacy_file: Path, text: str, root: Path) -> TreeFacts | None:
    """What the modules of the legacy tree ``root`` offer the script ``legacy_file`` (its
    optimizer factories and classes: :class:`bf16_migrate.tree_modules.TreeFactsReader`)."""
    from ..tree_modules import TreeFactsReader

    def read_python(module: Path) -> tuple[str, str]:
        return read_source(module), "utf-8"

    return TreeFactsReader(read_python, lambda _: root)(legacy_file, text)


def _is_legacy_script(text: str, path: str, env: Mapping[str, str], tree: TreeFacts | None = None) -> bool:
    """Whether the codemod takes ``text`` for a script that ran under the switch (settings in
    force for it, or the mode's change made): not a module that merely reads the variable."""
    from ..python import migrate_source

    try:
        result = migrate_source(text, all_modes()[0], path, launched_with=dict(env) or None, tree=tree)
    except Exception:
        return bool(env)
    return bool(result.legacy_env) or result.outcome.took


def plan_script(
    script: Path,
    checkout,
    mode: Mode | None = None,
    legacy_env: Mapping[str, str] | None = None,
    args: Sequence[str] | None = (),
    settings: list[LaunchSetting] | None = None,
) -> list[Job]:
    """The jobs verifying the work tree's ``script`` against ``checkout`` (see the module
    docstring for the settings and the mode). ``args``: the script's arguments for every job
    (``--``), or None for the arguments of the launch lines at REV that give each job its
    setting (:func:`_launch_args`). Raises :class:`RunError` when the script does not exist at
    the checkout's revision."""
    script = Path(script).resolve()
    rel = checkout.relative(script)
    legacy_file = checkout.legacy_file(script)
    try:
        legacy_text = read_source(legacy_file)
        migrated_text = read_source(script)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise RunError(f"{rel}: cannot be read: {exc}") from exc
    root = checkout.tree.resolve()
    if settings is None:
        settings = launch_settings(checkout.tree)
    mine = settings_for(legacy_file, settings)
    notes: list[str] = []
    variants = _variants(mine, rel, root, checkout.rev, legacy_env, legacy_text, notes)
    notes.extend(_still_set(script, rel, checkout, mine))
    jobs = []
    for env, source, launches in variants:
        if mode is not None:
            chosen, how = mode, "--mode"
        else:
            chosen, how = detect_mode(legacy_text, migrated_text, rel, env, tree_facts(legacy_file, legacy_text, root))
        job_notes = list(notes)
        if args is None:
            job_args, args_source = _launch_args(launches, rel, root, job_notes)
        else:
            job_args, args_source = [str(a) for a in args], (["--"] if args else [])
        jobs.append(Job(script, rel, env, source, chosen, how, job_args, job_notes, args_source=args_source))
    return jobs


_Variant = tuple[dict[str, str], list[str], list[LaunchSetting]]
"""One legacy setting to verify under: the variables, where they came from, the launches that
give it (their arguments are the script's, see :func:`_launch_args`)."""


def _variants(
    mine: list[LaunchSetting],
    rel: str,
    root: Path,
    rev: str,
    legacy_env: Mapping[str, str] | None,
    legacy_text: str,
    notes: list[str],
) -> list[_Variant]:
    """The distinct legacy settings the launches ``mine`` of the script ``rel`` put in force
    (``--legacy-env`` instead when given; the script's own writes when none switches anything
    on), noting in ``notes`` the launches left out and why."""
    if legacy_env:
        return [(dict(legacy_env), ["--legacy-env"], list(mine))]
    by_env: dict[tuple[tuple[str, str], ...], tuple[list[str], list[LaunchSetting]]] = {}
    for s in mine:
        on = _on(s.env)
        if s.computed:
            notes.append(
                f"{s.where(root)} sets {', '.join(s.computed)} to a value computed when it runs: not verified under it"
            )
        if not on:
            continue
        if not s.sure:
            notes.append(f"{s.where(root)} (`{s.text}`) switches {_env_text(on)} on some paths only")
        wheres, launches = by_env.setdefault(tuple(sorted(on.items())), ([], []))
        wheres.append(s.where(root))
        launches.append(s)
    variants: list[_Variant] = [(dict(key), wheres, launches) for key, (wheres, launches) in by_env.items()]
    if by_env:
        for s in mine:
            if not _on(s.env) and not s.computed:
                notes.append(
                    f"{s.where(root)} (`{s.text}`) runs {rel} without a legacy setting (fp32 there): not verified; "
                    "the migrated script computes in bf16 there too"
                )
    if len(variants) > 1:
        notes.append(f"the launchers at {rev} disagree: {rel} is verified under each of the {len(variants)} settings")
    if not variants:
        variants.append(({}, ["its own writes"] if any(v in legacy_text for v in LEGACY_VARIABLES) else [], list(mine)))
    return variants


def _launch_args(
    launches: Sequence[LaunchSetting], rel: str, root: Path, notes: list[str]
) -> tuple[list[str], list[str]]:
    """The arguments a job of ``rel`` runs with when ``--`` gives none: the words of the first
    launch line among ``launches`` whose arguments are all written out (``python train.py
    --steps 30``: ``--steps 30``), and that launch's ``launcher:line``. A launch whose
    arguments are computed when it runs (``--data "$DATA"``) is not guessed, and launches
    that pass other arguments are named in ``notes``. No launch: no arguments."""
    static = [s for s in launches if all(word is not None for word in s.args)]
    for s in launches:
        if s not in static:
            notes.append(f"{s.where(root)} (`{s.text}`) passes {rel} arguments computed when it runs: not used")
    if not static:
        if launches:
            notes.append(f"{rel} runs without arguments (pass them after `--`)")
        return [], []
    chosen = static[0]
    words = [str(word) for word in chosen.args]
    for s in static[1:]:
        if [str(word) for word in s.args] != words:
            notes.append(
                f"{s.where(root)} (`{s.text}`) starts {rel} with other arguments: verified with those of "
                f"{chosen.where(root)}"
            )
    return words, ([chosen.where(root)] if words else [])


def _still_set(script: Path, rel: str, checkout, mine: list[LaunchSetting]) -> list[str]:
    """Notes for the launchers of ``script`` at REV that, in the work tree, still switch a
    legacy variable on for it (the rewrite kept the setting, and said why): the migrated run is
    made without it, as verify removes the legacy variables from its environment."""
    files = sorted({checkout.work_root / checkout.relative(s.launcher) for s in mine})
    files = [f for f in files if f.is_file()]
    if not files:
        return []
    try:
        now = settings_for(script, launch_settings(checkout.work_root, only=tuple(files)))
    except Exception:  # an analysis failure must not lose the verify: the rewrite reports it
        return []
    return [
        f"{s.where(checkout.work_root)} in the work tree still sets {_env_text(_on(s.env))} for {rel}: the migrated "
        "run "
        "is made without it (verify removes the legacy variables from its environment); see the rewrite's findings "
        "for why it was kept"
        for s in now
        if _on(s.env)
    ]


def _imports_closure(path: Path, root: Path, limit: int = 200) -> set[Path]:
    """Files of the tree ``path`` imports, directly or through other files of the tree."""

    seen: set[Path] = set()
    todo = [path]
    while todo and len(seen) < limit:
        current = todo.pop()
        try:
            tree = ast.parse(current.read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue
        for module in tree_imports(current, tree, root, path.parent):
            key = module.resolve()
            if key not in seen and key != path.resolve():
                seen.add(key)
                todo.append(module)
    return seen


def plan_tree(
    checkout,
    mode: Mode | None = None,
    legacy_env: Mapping[str, str] | None = None,
    args: Sequence[str] | None = None,
    notes: list[str] | None = None,
) -> list[Job]:
    """The jobs of ``verify --against REV`` without a script (see the module docstring).
    ``args``: every script's arguments (those after ``--``), or None for each script's launch
    line at REV (:func:`plan_script`). ``notes`` receives what was left out and why."""
    notes = notes if notes is not None else []
    changed = checkout.changed()
    root = checkout.tree.resolve()
    settings = launch_settings(checkout.tree)
    launchers_of: dict[Path, set[str]] = {}
    env_of: dict[Path, dict[str, str]] = {}
    for s in settings:
        if _on(s.env):
            launchers_of.setdefault(s.script, set()).add(checkout.relative(s.launcher))
            env_of.setdefault(s.script, _on(s.env))
    candidates = set(launchers_of)
    for found in scan([root]):
        if found.kind == "python" and found.problem is None:
            resolved = found.path.resolve()
            if root in resolved.parents:  # not an untracked file linked in from the work tree
                candidates.add(resolved)
    jobs: list[Job] = []
    for legacy_file in sorted(candidates):
        rel = checkout.relative(legacy_file)
        try:
            text = read_source(legacy_file)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        if not _is_legacy_script(text, rel, env_of.get(legacy_file, {}), tree_facts(legacy_file, text, root)):
            continue
        why = []
        if rel in changed:
            why.append("changed")
        moved = sorted(launcher for launcher in launchers_of.get(legacy_file, ()) if launcher in changed)
        if moved:
            why.append(f"its launcher {', '.join(moved)} changed")
        modules = sorted(
            checkout.relative(m) for m in _imports_closure(legacy_file, root) if checkout.relative(m) in changed
        )
        if modules:
            why.append(f"the module(s) it imports {', '.join(modules)} changed")
        if not why:
            continue
        depends = sorted({*([rel] if rel in changed else []), *moved, *modules})
        work = checkout.work_root / rel
        if not work.is_file():
            notes.append(f"{rel}: a legacy script at {checkout.rev} that the work tree no longer has: not verified")
            continue
        for job in plan_script(work, checkout, mode, legacy_env, args, settings):
            job.notes.insert(0, f"selected: {'; '.join(why)}")
            job.depends = list(depends)
            jobs.append(job)
    return jobs


def list_entries(jobs: Iterable[Job], against: str | None) -> list[dict[str, Any]]:
    """The ``--list`` document: one entry per job (a CI matrix)."""
    return [job.to_dict(against) for job in jobs]


# -- running -----------------------------------------------------------------------------------


def run_jobs(
    jobs: Sequence[Job],
    checkout,
    *,
    steps: int,
    timeout: float,
    parallel: int = 1,
    progress_for: Callable[[Job, int], Any] | None = None,
    announce: Callable[[str], None] | None = None,
    **verify_kwargs: Any,
) -> list[Outcome]:
    """Verify every job (``parallel`` at once, each with its own legacy / migrated / reference
    runs) and return their outcomes in the jobs' order. ``progress_for(job, index)`` gives a
    context manager yielding the job's :class:`~.runner.Progress` (None: no progress);
    ``announce(text)`` is told when a job starts and ends. A job that cannot be made is an
    outcome with its error; KeyboardInterrupt stops every run (children killed, temporary
    directories removed) and propagates. Each job is verified as a :class:`~.jobs.VerifyJob`
    (``verify_kwargs``: ``max_steps``, ``trace``, ``trace_time``)."""
    outcomes: list[Outcome | None] = [None] * len(jobs)

    def one(index: int) -> None:
        job = jobs[index]
        if announce is not None:
            env = _env_text(job.legacy_env) if job.legacy_env else "the script's own settings"
            src = f" from {', '.join(job.source)}" if job.legacy_env and job.source else ""
            announce(f"[{index + 1}/{len(jobs)}] {job.rel}: mode {job.mode}, legacy run under {env}{src}")
        started = time.monotonic()
        manager = progress_for(job, index) if progress_for is not None else None
        try:
            verify = VerifyJob.planned(job, checkout, steps=steps, timeout=timeout, **verify_kwargs)
            if manager is None:
                report = verify.run()
            else:
                with manager as progress:
                    report = verify.run(progress)
            outcomes[index] = Outcome(job, report=report)
        except RunError as exc:
            outcomes[index] = Outcome(job, error=exc)
        out = outcomes[index]
        if announce is not None and out is not None:
            announce(f"[{index + 1}/{len(jobs)}] {job.rel}: {out.status} in {time.monotonic() - started:.1f} s")

    parallel = max(1, int(parallel))
    if parallel == 1 or len(jobs) <= 1:
        for i in range(len(jobs)):
            one(i)
    else:
        pool = ThreadPoolExecutor(max_workers=parallel)
        futures = [pool.submit(one, i) for i in range(len(jobs))]
        try:
            for future in futures:
                while True:
                    try:
                        future.result(timeout=0.2)
                        break
                    except _FutureTimeout:
                        continue
        except BaseException:
            stop_all.set()
            pool.shutdown(wait=True, cancel_futures=True)
            stop_all.clear()
            raise
        pool.shutdown(wait=True)
    return [o for o in outcomes if o is not None]
