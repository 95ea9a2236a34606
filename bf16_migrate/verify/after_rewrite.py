"""``bf16-migrate PATHS --verify``: prove the rewrite that was just written, and with
``--revert-failed`` put back what could not be proven.

The legacy side of each verify is the tree as it was a moment ago: :class:`PreRewriteTree`
mirrors the project into a temporary directory with the bytes every rewritten file held before
the commit (:func:`bf16_migrate.project.migrate_paths` takes that snapshot), so the legacy run
imports the legacy version of every module the rewrite changed, and the launchers' settings
come from the legacy launchers, exactly as ``verify --against REV`` does with a git revision
(:class:`~.gitrev.Checkout`, whose interface it keeps). The jobs are planned and run by
:mod:`.tree` (one per rewritten legacy script and launcher setting; one table, one exit code).

Reverting (:func:`revert_failed`): a job's verdict speaks for the changed files it depends on
(``Job.depends``: the script, its changed launchers, the changed modules it imports). Jobs that
share a changed file stand or fall together, so the files are grouped (connected components of
"job depends on file"); every group holding a job that did not PASS is put back byte for byte,
as one change (:mod:`bf16_migrate.commit`) in the reverse of the migration's safe order: the
launchers first (they switch the legacy variable back on), then the Python files, so no moment
holds a launcher without its switch in front of an uncast script. A file the rewrite created
(``--helpers-module``) is removed once no rewritten file of its directory stays migrated.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..carriers import REGISTRY
from ..commit import WriteRefused, commit, plan_bytes
from ..rules import Mode
from ..scan import kind_of, project_dir, skips_directory
from .gitrev import Checkout
from .parts import Status
from .progress import PrefixedProgress, make_progress
from .report import format_report
from .scratch import scratch_dir
from .tree import Job, Outcome, exit_code, plan_tree, run_jobs, summary_table

__all__ = ["PreRewriteTree", "Revert", "mirror_root", "revert_failed", "revert_groups"]


def mirror_root(paths: Iterable[Path]) -> Path:
    """The directory to mirror for files ``paths`` (absolute or relative to the current
    directory): the common parent of their projects (:func:`bf16_migrate.scan.project_dir`:
    the nearest directory holding ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``)."""
    dirs = [str(project_dir(Path(p).resolve())) for p in paths]
    if not dirs:
        raise ValueError("mirror_root: no path")
    return Path(os.path.commonpath(dirs))


class PreRewriteTree(Checkout):
    """The project at ``root`` as it was before the rewrite, in a temporary directory; a
    context manager (removed on exit, whatever the exit), with the interface of
    :class:`~.gitrev.Checkout` (``tree``, ``work_root``, ``path_for``, ``relative``, ``changed``...).

    ``restore``: path -> the bytes it held before the rewrite (None: the rewrite created it).
    ``ignore(path, is_dir)``: the ``.gitignore`` test of the run (:mod:`bf16_migrate.ignore`).

    The mirror is built by hand because no library makes this mixed copy (``shutil.copytree``
    copies or links everything): directories are recreated; Python files and the files
    bf16-migrate reads (launchers, Dockerfiles, YAML, notebooks, ``.env``) are copied, so a
    script run from the mirror finds its legacy siblings (CPython puts the *resolved* directory
    of a symlinked script on ``sys.path``) and the launcher analysis sees them as the tree's own;
    every other file (data, checkpoints) is a symlink to the work tree's, and so is every
    directory discovery skips (hidden, ``.gitignore``d, virtual environments), unless a
    rewritten file lies in it. Raises ``OSError`` when the mirror cannot be written.
    """

    def __init__(
        self, root: Path, restore: Mapping[Path, bytes | None], ignore: Callable[[str, bool], bool] | None = None
    ) -> None:
        self.work_root = Path(root).resolve()
        self.rev = "the files before the rewrite"
        self.sha = "pre-rewrite"
        self.label = "before the rewrite"
        self._restore = {Path(p).resolve(): data for p, data in restore.items()}
        outside = [str(p) for p in self._restore if self.work_root not in p.parents]
        if outside:
            raise ValueError(f"{outside[0]} is not under {self.work_root}")
        self._ignore = ignore
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.tree = Path()

    def __enter__(self) -> PreRewriteTree:
        self._tmp = scratch_dir("before")
        self.tree = Path(self._tmp.name) / self.work_root.name
        self.tree.mkdir()
        try:
            self._mirror()
            self._put_back()
        except BaseException:
            self._tmp.cleanup()
            raise
        return self

    def changed(self) -> set[str]:
        """The rewritten files, relative to the mirrored root (POSIX)."""
        return {p.relative_to(self.work_root).as_posix() for p in self._restore}

    def _mirror(self) -> None:
        needed = {
            parent
            for p in self._restore
            for parent in p.parents
            if parent == self.work_root or self.work_root in parent.parents
        }
        for directory, dirnames, filenames in os.walk(self.work_root):
            source = Path(directory)
            dest = self.tree / source.relative_to(self.work_root)
            kept = []
            for name in sorted(dirnames):
                path = source / name
                skipped = (
                    path.is_symlink()
                    or skips_directory(name)
                    or (self._ignore is not None and self._ignore(str(path), True))
                )
                if skipped and path not in needed:
                    os.symlink(path, dest / name)
                else:
                    (dest / name).mkdir()
                    kept.append(name)
            dirnames[:] = kept
            for name in filenames:
                path = source / name
                if path.is_file() and (name.endswith(".py") or kind_of(path) in REGISTRY):
                    shutil.copyfile(path, dest / name)
                    shutil.copymode(path, dest / name)
                else:
                    os.symlink(path, dest / name)

    def _put_back(self) -> None:
        for path, data in self._restore.items():
            dest = self.tree / path.relative_to(self.work_root)
            if os.path.lexists(dest):
                dest.unlink()
            if data is not None:
                dest.write_bytes(data)
                if path.exists():
                    shutil.copymode(path, dest)


def revert_groups(outcomes: Sequence[Outcome]) -> tuple[set[str], list[Job]]:
    """The changed files (relative, POSIX) to put back and the jobs whose files they are: every
    connected group of jobs (two jobs are connected when they depend on a common changed file)
    that holds a job whose status is not PASS."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, outcome in enumerate(outcomes):
        node = f"job:{i}"
        for rel in outcome.job.depends:
            parent[find(node)] = find(f"file:{rel}")
        find(node)
    bad = {find(f"job:{i}") for i, o in enumerate(outcomes) if o.status != Status.PASS}
    files = {rel for o in outcomes for rel in o.job.depends if find(f"file:{rel}") in bad}
    jobs = [o.job for i, o in enumerate(outcomes) if find(f"job:{i}") in bad]
    return files, jobs


@dataclass
class Revert:
    """What :func:`revert_failed` did: ``restored`` and ``removed`` paths (as the rewrite
    reported them), ``failed`` (path -> one-line reason: nothing of the group was put back when
    one file of it could not be), ``kept`` (rewritten files no verdict speaks for, left migrated)."""

    restored: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    failed: dict[Path, str] = field(default_factory=dict)
    kept: list[Path] = field(default_factory=list)


def revert_failed(
    outcomes: Sequence[Outcome],
    snapshot: Mapping[Path, bytes | None],
    root: Path,
    roots: list[Path],
    after: Mapping[Path, bytes] | None = None,
) -> Revert:
    """Put back the files of the jobs that did not pass (:func:`revert_groups`) with the bytes
    of ``snapshot`` (path -> bytes before the rewrite; None: created by it), as one commit.
    ``root``: the directory ``Job.depends`` is relative to; ``roots``: the paths given on the
    command line (a symlink is written through only to a target inside them). ``after``: the
    bytes the rewrite wrote; a file that no longer holds them (edited while the verify ran) is
    not put back, and then nothing is (:func:`bf16_migrate.commit.plan_bytes`)."""
    files, _jobs = revert_groups(outcomes)
    root = Path(root).resolve()
    by_rel = {Path(p).resolve().relative_to(root).as_posix(): Path(p) for p in snapshot}
    out = Revert()
    verified = {rel for o in outcomes for rel in o.job.depends}
    writes = []
    for rel in sorted(files):
        path = by_rel.get(rel)
        before = snapshot.get(path) if path is not None else None
        if path is None or before is None:
            continue
        phase = 1 if kind_of(path) == "python" else 0  # launchers first: the reverse of the migration's order
        try:
            writes.append(plan_bytes(path, before, roots, phase, expected=(after or {}).get(Path(path))))
        except WriteRefused as exc:
            out.failed[path] = str(exc)
    if out.failed:
        return out
    report = commit(writes)
    out.restored = list(report.written)
    out.failed.update(report.failed)
    if report.failed:
        return out
    back = {Path(p).resolve() for p in out.restored}
    for rel, path in sorted(by_rel.items()):
        if snapshot[path] is not None:
            if rel not in verified:
                out.kept.append(path)
            continue
        siblings = [
            p
            for p in snapshot
            if snapshot[p] is not None
            and Path(p).resolve().parent == Path(path).resolve().parent
            and kind_of(Path(p)) == "python"
        ]
        if siblings and all(Path(p).resolve() in back for p in siblings):
            try:
                Path(path).unlink()
                out.removed.append(path)
            except OSError as exc:
                out.failed[path] = f"{path}: cannot remove: {exc.strerror}"
    return out


@dataclass
class RewriteVerify:
    """The result of :func:`verify_rewrite`: the ``outcomes`` of the jobs, the ``notes``, the
    rewritten files no verdict speaks for (``unverified``, relative), the summary ``table``,
    the exit code (:func:`.tree.exit_code`; 4 with nothing to verify) and the ``revert`` made."""

    outcomes: list[Outcome]
    notes: list[str]
    unverified: list[str]
    table: str
    exit_code: int
    revert: Revert | None = None

    @property
    def trace_findings(self) -> list:
        """The dtype traces' findings of every verify (:mod:`.trace_findings`), a run that could
        not be made included: each :class:`~bf16_migrate.verify.trace_findings.TraceFinding`."""
        found: list = []
        for outcome in self.outcomes:
            if outcome.report is not None:
                found.extend(outcome.report.trace_findings)
            elif outcome.error is not None:
                found.extend(getattr(outcome.error, "findings", []))
        return found


def verify_rewrite(
    written: Sequence[Path],
    snapshot: Mapping[Path, bytes | None],
    *,
    mode: Mode,
    legacy_env: Mapping[str, str] | None,
    roots: list[Path],
    ignore: Callable[[str, bool], bool] | None = None,
    steps: int = 20,
    timeout: float = 600.0,
    jobs: int = 1,
    revert: bool = False,
    echo: Callable[[str, bool], None] = lambda text, err: None,
) -> RewriteVerify:
    """Verify every rewritten legacy script among ``written`` (the files the rewrite wrote)
    against its pre-rewrite bytes (``snapshot``), in ``mode``, each on the XLA device under the
    settings its legacy launchers had (``legacy_env`` overrides them, as ``--legacy-env`` does
    for the rewrite), ``jobs`` at once, ``steps`` optimizer steps per run, ``timeout`` seconds
    per run; with ``revert``, :func:`revert_failed` afterwards. ``echo(text, to_stderr)``
    prints: progress lines, each job's report and the table. KeyboardInterrupt stops the runs
    (children killed, temporaries removed) and propagates; nothing is reverted then."""
    restore = {Path(p): snapshot[p] for p in written if p in snapshot}
    after = _bytes_now(restore)  # what the rewrite wrote: a revert puts back only files still holding it
    notes: list[str] = [
        f"{p}: rewritten but its earlier bytes were not kept: not verified" for p in written if p not in snapshot
    ]
    if not restore:
        return RewriteVerify([], notes, [], "", 0)
    root = mirror_root(restore)
    with PreRewriteTree(root, restore, ignore) as before:
        planned = plan_tree(before, mode, dict(legacy_env) if legacy_env else None, (), notes)
        depends = {rel for job in planned for rel in job.depends}
        created = {
            Path(p).resolve().relative_to(before.work_root).as_posix() for p, data in restore.items() if data is None
        }
        unverified = sorted(before.changed() - depends - created)
        for rel in unverified:
            notes.append(
                f"{rel}: rewritten, but no legacy script verified here depends on it (not a script, or its script is "
                "not rewritten): not proven"
            )
        title = f"bf16-migrate --verify: {len(planned)} verify(s) of the rewrite, --jobs {jobs}"
        if not planned:
            table = f"{title}\n\nnothing to verify: the rewrite changed no legacy script\n" + "".join(
                f"Note: {n}\n" for n in notes
            )
            return RewriteVerify([], notes, unverified, table, 0)

        def progress_for(job: Job, index: int):
            if jobs > 1:
                return PrefixedProgress(sys.stderr, steps, job.rel)
            return make_progress(steps, ["legacy", "migrated", "reference"])

        outcomes = run_jobs(
            planned,
            before,
            steps=steps,
            timeout=timeout,
            parallel=jobs,
            progress_for=progress_for,
            announce=lambda text: echo(f"verify: {text}", True),
        )
    for outcome in outcomes:
        echo(f"==> {outcome.job.rel} ({outcome.job.mode}) <==", False)
        echo(format_report(outcome.report) if outcome.report is not None else f"error: {outcome.error}\n", False)
    table = summary_table(outcomes, title, notes)

    result = RewriteVerify(outcomes, notes, unverified, table, exit_code(o.status for o in outcomes))
    if revert and result.exit_code != 0:
        result.revert = revert_failed(outcomes, restore, root, roots, after=after)
    return result


def _bytes_now(paths) -> dict[Path, bytes]:
    """The bytes each of ``paths`` holds now (those that cannot be read are left out)."""
    now: dict[Path, bytes] = {}
    for path in paths:
        try:
            now[Path(path)] = Path(path).read_bytes()
        except OSError:
            continue
    return now
