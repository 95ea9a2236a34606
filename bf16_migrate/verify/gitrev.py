"""``verify --against REV``: the legacy tree of an already migrated repository, read from git.

:class:`Checkout` extracts the whole tree at REV into a temporary directory (``git archive``,
which writes the commit's tree as a tar stream to stdout: https://git-scm.com/docs/git-archive),
so the legacy run imports the legacy version of every module of the tree, not the work tree's.
:func:`changed_paths` lists what differs between REV and the work tree (``git diff --name-only
REV``: https://git-scm.com/docs/git-diff). :func:`legacy_source_at` reads one file's text
(``git show REV:path``).

Git runs read-only (``rev-parse``, ``show``, ``archive``, ``diff``, ``ls-files``); nothing is
written into the user's repository (no worktree, no index change), no network. Every failure is
a :class:`~bf16_migrate.verify.records.RunError` with what to try (the CLI maps it to exit code 2).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
import tokenize
from pathlib import Path, PurePosixPath

from .records import RunError
from .scratch import scratch_dir

__all__ = ["Checkout", "changed_paths", "legacy_source_at", "repo_root", "resolve_commit"]


def _git(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", *args], cwd=str(cwd), capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout
        )
    except FileNotFoundError as exc:
        raise RunError(
            "--against needs git, which is not on PATH", hint="install git, or verify the legacy file itself"
        ) from exc
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - a local git does not hang
        raise RunError(f"git {' '.join(args)} did not answer in 60 s") from exc


def legacy_source_at(script: Path, rev: str) -> tuple[str, str]:
    """The text of ``script`` at git revision ``rev``, and the commit it resolved to (hex).

    ``script``: a path inside a git work tree (the migrated file; it need not be committed).
    The blob is decoded as Python would (coding cookie, BOM; UTF-8 by default).

    Raises :class:`RunError` when git is missing, ``script`` is not inside a git work tree,
    ``rev`` names no commit, the path does not exist at ``rev``, or the text cannot be decoded.
    """
    script = Path(script).resolve()
    where = script.parent
    top = _git(where, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise RunError(
            f"--against {rev}: {script.parent} is not inside a git repository",
            hint="run verify from the repository's work tree, or drop --against and pass the legacy file itself",
        )
    root = Path(top.stdout.decode().strip()).resolve()
    try:
        rel = script.relative_to(root).as_posix()
    except ValueError:  # pragma: no cover - rev-parse answered for this directory
        raise RunError(f"--against {rev}: {script} is outside the work tree {root}") from None
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if commit.returncode != 0:
        raise RunError(
            f"--against {rev}: no such commit in {root}",
            hint="name a commit, branch or tag (e.g. HEAD~1, the commit before the migration)",
        )
    sha = commit.stdout.decode().strip()
    blob = _git(root, "show", f"{sha}:{rel}")
    if blob.returncode != 0:
        raise RunError(
            f"--against {rev}: {rel} does not exist at {rev} ({sha[:12]})",
            hint="was the file renamed or added after that commit? pass the revision where the legacy file exists",
        )
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(blob.stdout).readline)
        text = blob.stdout.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise RunError(f"--against {rev}: {rel} at {rev} cannot be decoded: {exc}") from exc
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):  # pragma: no cover - decode drops it
        text = text[1:]
    return text, sha


def repo_root(where: Path, rev: str) -> Path:
    """The top of the git work tree holding the directory ``where`` (``rev`` is named in the
    error). Raises :class:`RunError` outside a git work tree."""
    top = _git(where, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise RunError(
            f"--against {rev}: {where} is not inside a git repository",
            hint="run verify from the repository's work tree, or drop --against and pass the legacy file itself",
        )
    return Path(top.stdout.decode().strip()).resolve()


def resolve_commit(root: Path, rev: str) -> str:
    """The full hex name of the commit ``rev`` names in the repository at ``root``."""
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if commit.returncode != 0:
        raise RunError(
            f"--against {rev}: no such commit in {root}",
            hint="name a commit, branch or tag (e.g. HEAD~1, the commit before the migration)",
        )
    return commit.stdout.decode().strip()


def changed_paths(root: Path, sha: str) -> set[str]:
    """Paths (relative to ``root``, POSIX) whose content differs between commit ``sha`` and the
    work tree, uncommitted changes included (``git diff --name-only --no-renames -z SHA``: a
    renamed file is its old and its new name). Untracked files are not listed."""
    diff = _git(root, "diff", "--name-only", "--no-renames", "-z", sha, "--", timeout=300)
    if diff.returncode != 0:
        raise RunError(f"git diff --name-only {sha[:12]} failed: {diff.stderr.decode(errors='replace').strip()}")
    return {name for name in diff.stdout.decode("utf-8", "surrogateescape").split("\0") if name}


class Checkout:
    """The tree of commit ``rev`` of the repository at ``root``, extracted into a temporary
    directory; a context manager (the directory is removed on exit, whatever the exit).

    ``git archive --format=tar SHA`` writes the committed tree (files, symlinks, executable
    bits; not submodules, and ``export-ignore`` attributes apply); it is unpacked with
    :mod:`tarfile`'s ``data`` filter (no path outside the directory, no device file). The user's
    repository is only read: no ``git worktree``, no index or ref is touched.

    Files the work tree holds but git does not track (data sets, checkpoints, a virtual
    environment: ``git ls-files --others --directory``) are linked into the checkout where it
    has nothing of that name, so a script that reads ``data/`` beside itself finds it in the
    legacy run too. ``root`` (work tree), ``tree`` (the checkout), ``sha``, ``rev`` and
    ``label`` (``"git REV (sha12)"``) are attributes.
    """

    def __init__(self, root: Path, rev: str) -> None:
        self.work_root = Path(root).resolve()
        self.rev = rev
        self.sha = resolve_commit(self.work_root, rev)
        self.label = f"git {rev} ({self.sha[:12]})"
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.tree = Path()

    def __enter__(self) -> Checkout:
        self._tmp = scratch_dir("against")
        self.tree = Path(self._tmp.name) / self.work_root.name
        self.tree.mkdir()
        try:
            self._extract()
            self._link_untracked()
        except BaseException:
            self._tmp.cleanup()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _extract(self) -> None:
        try:
            proc = subprocess.Popen(
                ["git", "archive", "--format=tar", self.sha],
                cwd=str(self.work_root),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError as exc:
            raise RunError("--against needs git, which is not on PATH") from exc
        assert proc.stdout is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                tar.extractall(self.tree, filter="data")
        except tarfile.TarError as exc:
            proc.kill()
            proc.wait()
            raise RunError(f"--against {self.rev}: the tree at {self.sha[:12]} could not be extracted: {exc}") from exc
        finally:
            err = proc.stderr.read() if proc.stderr is not None else b""
            proc.wait()
        if proc.returncode != 0:
            raise RunError(
                f"--against {self.rev}: git archive {self.sha[:12]} failed: {err.decode(errors='replace').strip()}"
            )

    def _link_untracked(self) -> None:
        others = _git(self.work_root, "ls-files", "--others", "--directory", "-z", timeout=300)
        if others.returncode != 0:
            return
        for name in others.stdout.decode("utf-8", "surrogateescape").split("\0"):
            name = name.rstrip("/")
            if not name:
                continue
            dest = self.tree / PurePosixPath(name)
            if dest.exists() or os.path.islink(dest) or not dest.parent.is_dir():
                continue
            try:
                os.symlink(self.work_root / PurePosixPath(name), dest)
            except OSError:
                pass

    def changed(self) -> set[str]:
        """Paths (relative to the repository's top, POSIX) that differ between this revision and
        the work tree (:func:`changed_paths`)."""
        return changed_paths(self.work_root, self.sha)

    def path_for(self, work_path: Path) -> Path:
        """The checkout's file for ``work_path`` (a path in the work tree); it may not exist."""
        return self.tree / Path(work_path).resolve().relative_to(self.work_root)

    def legacy_file(self, work_path: Path) -> Path:
        """The checkout's file for the script ``work_path``; :class:`RunError` (with what to
        try) when it does not exist at the revision."""
        legacy = self.path_for(work_path)
        if not legacy.is_file():
            raise RunError(
                f"--against {self.rev}: {self.relative(work_path)} does not exist at {self.rev} ({self.sha[:12]})",
                hint="was the file renamed or added after that commit? pass the revision where the legacy file exists",
            )
        return legacy

    def work_path(self, tree_path: Path) -> Path:
        """The work tree's file for ``tree_path`` (a path in the checkout)."""
        return self.work_root / Path(tree_path).resolve().relative_to(self.tree.resolve())

    def relative(self, path: Path) -> str:
        """``path`` (in the checkout or the work tree) relative to the repository's top, POSIX."""
        p = Path(path).resolve()
        for base in (self.tree.resolve(), self.work_root):
            try:
                return p.relative_to(base).as_posix()
            except ValueError:
                continue
        return str(path)

    def map_pythonpath(self, value: str) -> str:
        """A ``PYTHONPATH`` with every entry inside the work tree moved to the checkout (so the
        legacy run imports the legacy modules of ``src/`` too)."""
        out = []
        for entry in value.split(os.pathsep):
            if entry and os.path.isabs(entry):
                try:
                    rel = Path(entry).resolve().relative_to(self.work_root)
                except ValueError:
                    pass
                else:
                    entry = str(self.tree / rel)
            out.append(entry)
        return os.pathsep.join(out)
