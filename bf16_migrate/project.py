"""Migrate a set of files: scan, plan across files, write (or diff/check), collect the findings.

Python files go through the codemod; carriers (shell, Dockerfile, YAML, ``.env``, notebooks)
through :mod:`bf16_migrate.carriers`, whose planner also migrates the Python scripts they launch
(found in the tree even when they were not among the paths given); documentation and files of
other kinds that name a variable are reported, never edited (:mod:`.mentions`). No click here:
:func:`migrate_paths` returns an :class:`Outcome` the CLI turns into output and an exit code.

``legacy_env`` (``--legacy-env KEY=VALUE``): settings the scripts run under from outside the
tree (a job spec). They go to the training scripts among the paths, which get the mode's code
change as if a launcher of the tree set them: every Python file named directly (it is taken to
be a script; if it cannot take the change its diagnostics say why), and each Python file under
a directory whose trial migration finds a model to migrate (a module with no optimizer built
from ``<model>.parameters()`` is left alone, without a word). Test modules never receive it
(tests are not rewritten); a training script with a test's name, such as pytorch/xla's
``test_train_mp_mnist.py``, is a script (:func:`.python.test_or_script.is_test_module`). When a
setting that switches bf16 on reaches no script, that is an unfixed finding (BFM110): the switch
must not be dropped without its replacement.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from . import escaped_bytes
from .bounds import Bounds
from .carriers import REGISTRY, CarrierError, analyze, for_kind
from .carriers.link import CarrierFile, FileResult, LinkPlanner
from .carriers.python_loaders import PythonLoader, python_loaders
from .commit import CommitReport, WriteRefused, commit, plan_new_file, plan_write, remove_stale_temporaries
from .diagnostics import Diagnostic, report
from .env_modules import migrate_importers, migrate_launched
from .helpers_module import module_path, module_text
from .ignore import matching_exclude
from .mentions import (
    decode_text,
    docs_findings,
    first_bad_byte,
    first_mention,
    mentions,
    sets_nothing_undecodable,
    unsupported_findings,
)
from .migrations import Migrations
from .patch import file_patch
from .python import SCRIPT_REFUSALS, ParseError, Refusal, migrate_source
from .python.test_or_script import is_test_module
from .rules import Mode, is_truthy, load_rules, mode_named
from .scan import Candidate, ScanError, kind_of, scan, walk
from .tree_modules import TreeFactsReader, migrate_imported_modules
from .write import ReadError, read_bytes, read_source, read_text_file

if TYPE_CHECKING:
    from .repairs import RepairSite


@dataclass
class Outcome:
    """What one run did: ``changed`` files (written, or that would be with --diff/--check),
    ``diffs`` by file (each a patch ``git apply`` takes, in the file's encoding), the
    ``diagnostics``, and per-file ``errors`` (one line each). When writing, ``changed`` holds
    only the files actually written; the findings of a file that was not written are not
    ``fixed``. ``interrupted``: the name of a signal (``"SIGINT"``)
    that arrived while the commit was held; ``removed`` the stale temporaries of an earlier
    killed run that this run removed."""

    changed: list[Path] = field(default_factory=list)
    diffs: dict[Path, bytes] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files_seen: int = 0
    interrupted: str | None = None
    removed: list[Path] = field(default_factory=list)
    held_back: list[Path] = field(default_factory=list)
    """Files that were ready but not written because another file of the run could not be
    (the errors say which): committing them alone could leave a launcher without its script."""
    sources: dict[Path, tuple[str, str]] = field(default_factory=dict)
    """For each file in ``changed`` (before the commit: each file to change), its old and new
    text: the edits of a dry run, the migrated text of ``-`` (stdin)."""
    kept: dict[Path, str] = field(default_factory=dict)
    """Files left as they are although the migration would change them, each with the reason
    given by the ``hold`` callback of :func:`migrate_paths` (a ``# noqa`` on a legacy write)."""
    not_examined: list[str] = field(default_factory=list)
    """What the migrations that took the change did not examine (``path:line: what``, from each
    file's :class:`bf16_migrate.python.outcome.Outcome`): "nothing left to do by hand" may be said
    only when it is empty."""
    nothing_to_change: list[tuple[str, int]] = field(default_factory=list)
    """The files that name a legacy variable only where nothing is set (comments), valid text, with
    no change and no finding: each one's path and the line of its first mention (the summary names them)."""


def _roots(paths: list[Path]) -> list[Path]:
    return [p if os.path.isdir(p) else p.parent for p in paths]


def _root_of(path: Path, roots: list[Path]) -> Path:
    best = None
    rp = path.resolve()
    for root in roots:
        rr = root.resolve()
        if rr == rp or rr in rp.parents:
            if best is None or len(str(rr)) > len(str(best.resolve())):
                best = root
    return best if best is not None else path.parent


def read_rules() -> None:
    """Read every rule file now (:func:`bf16_migrate.rules.load_rules`, once per process): the
    run calls it as soon as one file names a legacy variable, while a large tree's remaining
    files are still read in another process (:func:`bf16_migrate.scan.scan`'s ``on_found``)."""
    load_rules()


def migrate_paths(
    paths: list[Path],
    mode: str | Mode,
    write: bool,
    exclude: tuple[str, ...] = (),
    fp32_optimizer_state: bool = False,
    legacy_env: dict[str, str] | None = None,
    ignore=None,
    hold=None,
    helpers_module: str | None = None,
    snapshot: dict[Path, bytes | None] | None = None,
    progress: WalkReports | None = None,
    candidates: list[Candidate] | None = None,
    repairs: Sequence[RepairSite] = (),
) -> Outcome:
    """Migrate every candidate file under ``paths`` in ``mode``; write only when ``write``.

    ``legacy_env``: legacy settings the scripts among ``paths`` run under from outside the tree
    (see the module docstring; its keys must be variables of the rules).
    Raises :class:`ScanError` when a path does not exist. A file that cannot be read, decoded or
    parsed is recorded in ``Outcome.errors`` and left untouched; the others still run. The
    writes are one change (:mod:`bf16_migrate.commit`): all staged first, nothing committed if
    one cannot be, Python files committed before the launchers that start them.

    ``ignore(path, is_dir)``: True for a file or directory the directory walks skip (e.g.
    gitignored). ``hold(planned)``: given the per-file results that would change, the files to
    leave as they are (path -> reason); their fixed findings become unfixed with the reason.

    ``helpers_module``: the migrated scripts import their helper functions from a module of that
    name written beside them, once per directory (:mod:`bf16_migrate.helpers_module`).

    ``snapshot``: when given (and writing), receives the bytes every file to change holds just
    before the commit (None for a file the run creates), keyed by its path as reported: what
    ``--revert-failed`` puts back.

    ``progress``: told each phase of the run and each step of it (a file read, a migration
    made), for a progress display (:class:`bf16_migrate.walk_progress.WalkProgress`).

    ``candidates``: what ``scan(paths, exclude, ignore)`` found, when the caller has scanned
    already (the command line does, to skip all start-up work when nothing names a variable):
    the tree is walked once per run.

    ``repairs``: the repair sites of a verify run's dtype trace (``--trace FILE``, ``verify
    --fix``), applied to the migrated text of the files they name (a file the run leaves as it is
    is read and added), each reported where the trace named it (:mod:`bf16_migrate.trace_repairs`)."""
    progress = progress if progress is not None else _Silent()
    mode = mode if isinstance(mode, Mode) else mode_named(mode)
    outcome = Outcome()
    roots = _roots(paths)
    if candidates is None:
        candidates = scan(paths, exclude, ignore)  # raises ScanError first, for a path that does not exist
    tree = TreeReader(roots, exclude, ignore, named=paths)
    python_files: dict[Path, tuple[str, str]] = {}
    extra: list[Diagnostic] = []
    external: dict[Path, dict[str, str]] = {}
    # the run's migrate_source calls: each once (a --legacy-env trial is its script's result)
    files = _FilesDone(progress)
    runs = Migrations(on_done=files.done)
    facts = TreeFactsReader(tree.read_python, lambda path: _root_of(path, roots), tree.left_out)
    if legacy_env:
        external = _legacy_env_scripts(
            paths,
            exclude,
            mode,
            dict(legacy_env),
            fp32_optimizer_state,
            python_files,
            extra,
            outcome,
            ignore,
            runs,
            facts,
        )
    planner = LinkPlanner(
        mode,
        tree.read_python,
        tree.load,
        tree.includers,
        find_python_loaders=tree.python_loaders,
        fp32_optimizer_state=fp32_optimizer_state,
        launched_with=external,
        helpers_module=helpers_module,
        migrations=runs,
        tree_facts=facts,
        left_out=tree.left_out,
    )
    taken = {path.resolve() for path in python_files}
    progress.phase("reading files", len(candidates))
    for candidate in candidates:
        progress.advance()
        if candidate.problem is not None:  # never opened, nor resolved (a symlink loop)
            outcome.errors.append(f"{candidate.path}: {candidate.problem}")
            continue
        outcome.files_seen += 1
        if candidate.path.resolve() in taken:  # already read for --legacy-env
            continue
        _one(candidate, roots, planner, python_files, extra, outcome)
    files.phase("migrating scripts", len(python_files))  # launched scripts that name no variable add to it
    results = planner.run(python_files)
    results, env_modules = migrate_importers(
        results,
        lambda: [path for path, _ in _python_files_of(paths, exclude, ignore)],
        tree.read_python,
        lambda path: _root_of(path, roots),
        lambda path, text, encoding, env: planner.python_result(path, text, encoding, env, None),
        planner.errors,
        lambda path, text, encoding, env: _entry_result(runs, mode, fp32_optimizer_state, path, text, encoding, env),
    )
    results = migrate_launched(
        results,
        tree.read_python,
        lambda path: _root_of(path, roots),
        tree.left_out,
        lambda path, text, encoding, env: planner.python_result(path, text, encoding, env, None),
        lambda path, text, encoding, took: planner.python_result(path, text, encoding, None, None, took),
        planner.errors,
    )
    files.phase("migrating imported modules", 0)
    results = migrate_imported_modules(
        results,
        tree.read_python,
        lambda path: _root_of(path, roots),
        mode,
        fp32_optimizer_state,
        planner.errors,
        migrate=runs,
        outside=tree.outside,
        excluded=tree.excluded,
        on_count=files.total_is,
        env_modules=env_modules,
    )
    files.phase(None)
    outcome.errors.extend(planner.errors)
    if repairs:
        from .trace_repairs import repair_results

        results = repair_results(results, repairs, paths, outcome.errors)
    extra.extend(_unreported(candidates, results, extra, outcome))
    _collect_diagnostics(outcome, extra, results)
    planned = [result for result in sorted(results, key=lambda r: str(r.path)) if result.new != result.old]
    if hold is not None:
        planned = _hold_back(outcome, planned, hold)
    planned += _helpers_modules(planned, helpers_module)
    _record_changes(outcome, planned)
    if write:
        outcome.removed = remove_stale_temporaries(
            sorted({c.path.parent for c in candidates} | {r.path.parent for r in planned})
        )
        if planned:
            progress.phase("writing", len(planned))
            _take_snapshot(planned, snapshot)
            _commit(planned, paths, outcome)
    return outcome


class WalkReports(Protocol):
    """What :func:`migrate_paths` tells a progress display: a phase (what it does, how many
    steps), a step done, a phase's total that grew."""

    def phase(self, text: str, total: int | None = None) -> None: ...

    def advance(self, steps: int = 1) -> None: ...

    def set_total(self, total: int) -> None: ...


class _Silent:
    def phase(self, text: str, total: int | None = None) -> None:
        pass

    def advance(self, steps: int = 1) -> None:
        pass

    def set_total(self, total: int) -> None:
        pass


class _FilesDone:
    """The migration phases of a progress display counted in files: one step per file the first
    time a migration of it is answered in the phase (a launched script is migrated for a trial,
    then for its result: one file), the phase's total raised when a file beyond it comes (a
    launched script that names no variable was not among the files read). Outside a phase
    (``phase(None)``), nothing is counted."""

    def __init__(self, progress: WalkReports) -> None:
        self.progress = progress
        self.counting = False
        self.seen: set[str] = set()
        self.total = 0

    def phase(self, text: str | None, total: int = 0) -> None:
        self.counting, self.seen, self.total = text is not None, set(), total
        if text is not None:
            self.progress.phase(text, total)

    def total_is(self, total: int) -> None:
        """The phase's total, once known (the modules the scripts import)."""
        self.total = max(total, len(self.seen))
        self.progress.set_total(self.total)

    def done(self, path: str) -> None:
        if not self.counting or path in self.seen:
            return
        self.seen.add(path)
        if len(self.seen) > self.total:
            self.total = len(self.seen)
            self.progress.set_total(self.total)
        self.progress.advance()


class TreeReader:
    """How the cross-file plan (:class:`bf16_migrate.carriers.link.LinkPlanner`) reads the tree
    under ``roots``: a carrier it follows (a launch, an include), the carriers that include a
    given file, and Python files; under the walk's ``exclude`` globs and ``ignore(path,
    is_dir)`` rules. Also what verify reads a tree's launchers with
    (:mod:`bf16_migrate.verify.launchers`)."""

    def __init__(self, roots: list[Path], exclude: tuple[str, ...], ignore, named: list[Path] | None = None) -> None:
        self.roots, self.exclude, self.ignore = roots, exclude, ignore
        self.bounds = Bounds(named) if named is not None else None
        self.named = {os.path.realpath(p) for p in named or () if not os.path.isdir(p)}

    def outside(self, path: Path) -> Path | None:
        """The real path of ``path`` when it lies outside the paths given (a symlink leads out
        of the tree: :class:`bf16_migrate.bounds.Bounds`), else None."""
        return self.bounds.outside(path) if self.bounds is not None else None

    def excluded(self, path: Path) -> str | None:
        """Why a file the plan found in the tree (a launched script, an imported module) is
        left out as the directory walk would leave it (an exclude glob, ``.gitignore``), or None;
        a file named on the command line is taken, as the walk takes it."""
        if os.path.realpath(path) in self.named:
            return None
        pattern = matching_exclude(path, _root_of(path, self.roots), self.exclude) if self.exclude else None
        if pattern is not None:
            return f"it is excluded (it matches the exclude pattern `{pattern}`)"
        if self.ignore is not None and self.ignore(path, False):
            return "it is excluded (.gitignore)"
        return None

    def left_out(self, path: Path) -> str | None:
        """Why the plan must neither read nor rewrite ``path`` (:meth:`outside`, :meth:`excluded`), or None."""
        real = self.outside(path)
        if real is not None:
            return f"{path} is {real}, outside the paths given (through a symlink)"
        why = self.excluded(path)
        return f"{path}: {why}" if why is not None else None

    def load(self, path: Path, kind: str | None = None) -> CarrierFile | None:
        """The carrier file at ``path`` analysed, or None when it is no carrier or cannot be
        read or parsed (only followed here: its own run reports it)."""
        kind = kind or kind_of(path)
        if kind not in REGISTRY:
            return None
        try:
            source = read_text_file(path, kind)
            analysis = analyze(kind, source.text, str(path))
        except (ReadError, CarrierError, OSError):
            return None
        return CarrierFile(path, _root_of(path, self.roots), source.text, source.encoding, analysis, render=False)

    def includers(self, path: Path, root: Path) -> list[CarrierFile]:
        """The carriers under ``root`` of a kind that includes others whose bytes name
        ``path``'s file name, analysed."""
        found = []
        needle = path.name.encode()
        for candidate_path, kind in walk(root, self.exclude, ignore=self.ignore):
            if kind not in REGISTRY or not for_kind(kind).INCLUDES or candidate_path.resolve() == path.resolve():
                continue
            try:
                if needle not in candidate_path.read_bytes():
                    continue
            except OSError:
                continue
            loaded = self.load(candidate_path, kind)
            if loaded is not None:
                found.append(loaded)
        return found

    def python_loaders(self, path: Path, root: Path) -> list[PythonLoader]:
        """The Python files under ``root`` that read ``path`` themselves (:mod:`.carriers.python_loaders`)."""
        scripts = (p for p, kind in walk(root, self.exclude, ignore=self.ignore) if kind == "python")
        return python_loaders(path, scripts, lambda p: p.read_bytes())

    @staticmethod
    def read_python(path: Path) -> tuple[str, str]:
        """A Python file's text and encoding (:class:`ReadError` when it cannot be read)."""
        source = read_source(path)
        return source.text, source.encoding


def _collect_diagnostics(outcome: Outcome, extra: list[Diagnostic], results: list) -> None:
    """The findings of the run, file by file in path order (each file's in the order found)."""
    by_path: dict[str, list[Diagnostic]] = {}
    for d in extra:
        by_path.setdefault(d.path, []).append(d)
    for result in results:
        by_path.setdefault(str(result.path), []).extend(result.diagnostics)
        outcome.not_examined.extend(result.not_examined)
    for key in sorted(by_path):
        outcome.diagnostics.extend(by_path[key])


def _unreported(
    candidates: list[Candidate], results: list, found: list[Diagnostic], outcome: Outcome
) -> list[Diagnostic]:
    """The candidates (files the scan found naming a legacy variable) that would end the run in
    silence: no change, no finding at their path (a notebook's ``nb.ipynb#cellN`` is its), no error
    naming them. Their mentions were all read as setting nothing (comments). One read as bytes it
    could not all decode (``utf-8+bytes``, :mod:`.escaped_bytes`) gets BFM094, naming the first
    byte that is not UTF-8 (:func:`.mentions.sets_nothing_undecodable`); any other is listed in
    ``outcome.nothing_to_change`` (with the line of its first mention), which the summary names."""
    heard: set[str] = {str(r.path) for r in results if r.new != r.old}
    heard.update(d.path.split("#", 1)[0] for d in found)
    heard.update(d.path.split("#", 1)[0] for r in results for d in r.diagnostics)
    heard.update(os.path.abspath(p) for p in list(heard))  # a file given as `job.slurm` and found as `./job.slurm`
    out = []
    for candidate in candidates:
        name = str(candidate.path)
        if candidate.kind not in REGISTRY and candidate.kind != "python":
            continue  # documentation and other kinds: every mention is reported (_reported_only)
        if candidate.problem is not None or name in heard or os.path.abspath(name) in heard:
            continue
        if any(e.startswith(f"{name}:") for e in outcome.errors):
            continue
        try:
            source = read_text_file(candidate.path, candidate.kind)
            data = read_bytes(candidate.path)
        except ReadError as exc:  # changed since it was read: said, never silent
            outcome.errors.append(str(exc))
            continue
        if not mentions(source.text):
            continue  # MY_XLA_USE_BF16_CACHE: the prefilter's bytes, but no variable named
        bad = first_bad_byte(data) if source.encoding == escaped_bytes.NAME else None
        if bad is not None:
            out.append(sets_nothing_undecodable(name, source.text, bad))
        else:
            outcome.nothing_to_change.append((name, first_mention(source.text)[0]))
    return out


def _hold_back(outcome: Outcome, planned: list, hold) -> list:
    """``planned`` without the files ``hold(planned)`` keeps as they are (recorded in
    ``outcome.kept``); their fixed findings become unfixed, with the reason."""
    outcome.kept = hold(planned)
    why = {str(path): reason for path, reason in outcome.kept.items()}
    outcome.diagnostics = [
        dataclasses.replace(d, fixed=False, message=f"{d.message} (left as it is: {why[d.path]})")
        if d.fixed and d.path in why
        else d
        for d in outcome.diagnostics
    ]
    return [result for result in planned if result.path not in outcome.kept]


def _record_changes(outcome: Outcome, planned: list) -> None:
    """Each planned file's path, old and new text, and patch (:func:`bf16_migrate.patch.file_patch`),
    in ``outcome``."""
    for result in planned:
        path = result.path
        outcome.changed.append(path)
        outcome.sources[path] = (result.old, result.new)
        created = result.old == "" and not os.path.lexists(path)  # a --helpers-module file to create
        try:
            outcome.diffs[path] = file_patch(path, result.old, result.new, result.encoding, created)
        except UnicodeEncodeError as exc:  # the write would be refused the same way (commit.plan_write)
            outcome.diffs[path] = b""
            outcome.errors.append(
                f"{path}: cannot write: the new text cannot be encoded as {result.encoding} ({exc.reason})"
            )


def _take_snapshot(planned: list, snapshot: dict[Path, bytes | None] | None) -> None:
    """The bytes each planned file holds before the commit (None: the run creates it), into
    ``snapshot`` when given; a file that cannot be read is left out (``--revert-failed`` then
    says it cannot put it back)."""
    if snapshot is None:
        return
    for result in planned:
        try:
            snapshot[result.path] = read_bytes(result.path) if os.path.lexists(result.path) else None
        except ReadError:
            pass


def _helpers_modules(planned, name: str | None) -> list[FileResult]:
    """The ``--helpers-module`` files the planned scripts import from, one per directory, as
    results to write (``old`` is "" for a file to create); those already up to date are left out.
    A module planned for scripts held back is held back with them (``hold`` runs before)."""
    if name is None:
        return []
    out = []
    for directory in sorted({r.path.parent for r in planned if getattr(r, "helpers", None)}):
        target = module_path(directory / "_", name)
        text = module_text(target)
        if text is not None:
            old = target.read_bytes().decode("utf-8") if target.exists() else ""
            out.append(FileResult(target, old, text, "utf-8", []))
    return out


def _commit(planned, paths: list[Path], outcome: Outcome) -> None:
    """Write ``planned`` (results whose text changed) as one change (:mod:`.commit`): Python
    files before the carriers that start them; nothing at all when a file cannot be staged.
    ``outcome`` is made to tell what was written, and only that."""
    writes, refused = [], {}
    bounds = Bounds(paths)
    for result in planned:
        phase = 0 if kind_of(result.path) == "python" else 1
        try:
            if result.old == "" and not os.path.lexists(result.path):  # a --helpers-module file to create
                writes.append(plan_new_file(result.path, result.new, phase))
            else:
                writes.append(plan_write(result.path, result.new, result.encoding, bounds, phase, old=result.old))
        except WriteRefused as exc:
            refused[result.path] = str(exc)
    if refused:
        report = CommitReport(failed=refused, not_written=[r.path for r in planned if r.path not in refused])
    else:
        report = commit(writes)
    outcome.changed = list(report.written)
    outcome.interrupted = report.signal
    if not report.failed:
        return
    outcome.errors.extend(report.failed.values())
    outcome.held_back = list(report.not_written)
    unwritten = {str(path) for path in [*report.failed, *report.not_written]}
    outcome.diagnostics = [
        dataclasses.replace(d, fixed=False, message=f"{d.message} (not written)")
        if d.fixed and d.path in unwritten
        else d
        for d in outcome.diagnostics
    ]


def _legacy_env_scripts(
    paths,
    exclude,
    mode,
    env,
    fp32_optimizer_state,
    python_files,
    extra,
    outcome,
    ignore=None,
    runs: Migrations | None = None,
    facts: TreeFactsReader | None = None,
) -> dict[Path, dict[str, str]]:
    """The Python files among ``paths`` that run under ``env`` (``--legacy-env``), each mapped
    to it; they are added to ``python_files``. Adds a BFM110 finding to ``extra`` for each
    setting that switches bf16 on when no file can take the change."""
    rules = load_rules()
    active = {k: v for k, v in env.items() if rules.variables[k].effective and is_truthy(v)}
    if not active:
        return {}  # bf16 was off, or an FP16 variable (no effect): no code change to make
    targets: dict[Path, dict[str, str]] = {}
    received, seen = False, set()
    for path, direct in _python_files_of(paths, exclude, ignore):
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        took = _script_under_env(
            path, direct, mode, env, fp32_optimizer_state, python_files, outcome, runs=runs, facts=facts
        )
        if took is not None:
            targets[path] = env
            received = received or took
    if not received:
        _report_no_script_takes(paths, active, mode, extra)
    return targets


def _python_files_of(paths, exclude, ignore) -> list[tuple[Path, bool]]:
    """The Python files ``paths`` name, each with whether it was named directly (True) or found
    by walking a directory (False, honouring ``exclude`` and ``ignore``), in the order given."""
    files: list[tuple[Path, bool]] = []
    for root in paths:
        if os.path.isfile(root):
            if kind_of(root) == "python":
                files.append((root, True))
        else:
            files.extend((path, False) for path, kind in walk(root, exclude, ignore=ignore) if kind == "python")
    return files


def _script_under_env(
    path: Path,
    direct: bool,
    mode,
    env,
    fp32_optimizer_state,
    python_files,
    outcome,
    runs: Migrations | None = None,
    facts: TreeFactsReader | None = None,
) -> bool | None:
    """Whether the Python file ``path`` is a script the job starts under ``env`` and, if so,
    whether it takes the change there (its trial under ``env``: True when it took the change or
    had none to make, False when not). None when it is not such a script: :func:`_script_source`
    left it out, it does not parse, or, found under a directory, its trial refused it and it
    builds no optimizer over a model the codemod cannot cast. A file named directly
    (``direct``) that parses is a script whatever its trial says: its diagnostics say why it
    cannot take the change. A script, and a file named directly that does not parse (reported
    when it is migrated), are added to ``python_files``."""
    found = _script_source(path, direct, outcome, facts)
    if found is None:
        return None
    source, tree = found
    try:
        trial = (runs or migrate_source)(
            source.text, mode, str(path), launched_with=env, fp32_optimizer_state=fp32_optimizer_state, tree=tree
        )
    except ParseError:
        if direct:  # reported when the file is migrated
            python_files[path] = (source.text, source.encoding)
        return None
    # the trial under the setting: not a script the change goes to (no model, a test's, a
    # framework's), or a script that has the change now
    refused = trial.outcome.refused(SCRIPT_REFUSALS)
    took = not refused and (trial.code == source.text or trial.outcome.took)
    has_optimizer = any(why is Refusal.MODEL_UNKNOWN for why, _ in refused)
    if not (took or direct or has_optimizer):
        return None
    # a script: it gets the change, or (named directly, or it builds an optimizer the
    # codemod cannot cast) its diagnostics say why it cannot
    python_files[path] = (source.text, source.encoding)
    return took


def _script_source(path: Path, direct: bool, outcome, facts: TreeFactsReader | None):
    """The source of ``path`` and its tree facts (None without ``facts``) when it may be a
    script the job starts, else None: a file that cannot be read (its error goes to ``outcome``
    when named directly; under a directory the scan reports it when it names a variable), a
    test module, or a file under a directory with no ``<model>.parameters()``, no ``torch_xla`` nor a
    factory of the tree (a module, not a script)."""
    try:
        source = read_source(path)
    except ReadError as exc:
        if direct:
            outcome.errors.append(str(exc))
        return None  # under a directory: reported by the scan when it names a variable
    if is_test_module(source.text, str(path), launched=direct):
        # a test module runs under pytest or unittest, not as the job's script (a file named
        # directly is what the job starts; one under a directory needs its own entry point)
        return None
    tree = facts(path, source.text) if facts is not None else None
    if (
        not direct
        and "parameters" not in source.text
        and "torch_xla" not in source.text
        and not (tree and any(m.factories for m in tree.modules))
    ):
        # no `<model>.parameters()`, no torch_xla (an evaluation script puts its model on the device
        # without an optimizer: found by a hunt, skipped without a word) nor a factory of the tree: a
        # module, not a script
        return None
    return source, tree


def _report_no_script_takes(paths, active: dict[str, str], mode, extra: list) -> None:
    """BFM110 in ``extra`` for each ``--legacy-env`` setting in ``active`` (one that switches
    bf16 on) when no script under ``paths`` can take the change, at the first path given."""
    where = paths[0] if paths else Path(".")
    named = ", ".join(str(p) for p in paths)
    for key, value in active.items():
        extra.append(
            report("BFM110", str(where), 1, 1, False, "legacy_env", variable=key, value=value, paths=named, mode=mode)
        )


def _entry_result(
    runs: Migrations,
    mode: Mode,
    fp32_optimizer_state: bool,
    path: Path,
    text: str,
    encoding: str,
    env: dict[str, str],
) -> FileResult:
    """The entry script ``path`` migrated as a module that sets ``env`` for code that took the change
    (``importers_migrated``: its writes go, :func:`bf16_migrate.env_modules.migrate_importers`). The
    entry parsed in its own run, so it parses here."""
    migrated = runs(
        text, mode, str(path), fp32_optimizer_state=fp32_optimizer_state, imported_under=env, importers_migrated=True
    )
    return FileResult(path, text, migrated.code, encoding, list(migrated.diagnostics))


def _one(
    candidate: Candidate, roots: list[Path], planner: LinkPlanner, python_files: dict, extra: list, outcome: Outcome
) -> None:
    path = candidate.path
    if candidate.kind != "python" and candidate.kind not in REGISTRY:
        _reported_only(candidate, extra, outcome)
        return
    try:
        source = read_text_file(path, candidate.kind)
    except ReadError as exc:
        outcome.errors.append(str(exc))
        return
    if candidate.kind == "python":
        python_files[path] = (source.text, source.encoding)
        return
    try:
        analysis = analyze(candidate.kind, source.text, str(path))
    except CarrierError as exc:
        outcome.errors.append(str(exc))
        return
    planner.add(CarrierFile(path, _root_of(path, roots), source.text, source.encoding, analysis))
    extra.extend(for_kind(candidate.kind).reported_text(path, source.text))


def _reported_only(candidate: Candidate, extra: list, outcome: Outcome) -> None:
    """A file bf16-migrate reads but never rewrites: documentation (BFM091 per line naming a
    variable) or a kind it has no parser for (BFM090 per mention)."""
    try:
        text, binary = decode_text(read_bytes(candidate.path))
    except ReadError as exc:
        outcome.errors.append(str(exc))
        return
    if candidate.kind == "docs" and not binary:
        found = docs_findings(str(candidate.path), text)
    else:
        found = unsupported_findings(candidate.path, text, binary)
    if not found and not any(name in text for name in load_rules().variables):
        # the bytes name a variable, but not in any encoding read here (e.g. UTF-32 without a BOM)
        found = [report("BFM090", str(candidate.path), 1, 1, False, "undecodable")]
    extra.extend(found)


__all__ = ["Outcome", "ScanError", "migrate_paths"]
