"""Write a run's changes as one change: stage every file, then commit them in a safe order.

A migration touches several files that depend on each other: a launcher whose
``XLA_USE_BF16=1`` was removed relies on the script it starts having been cast to bf16. Written
one at a time, a failed write or a ``kill -9`` between two writes could leave the launcher
migrated and the script not, and the job would train in FP32 without a word. So:

1. **Check** every target (:func:`plan_write`): only a regular file is written; a symlink is
   written through to its target when that target lies inside the paths given, and refused
   otherwise; a file with several hard links is written in place (its inode, and so every other
   name of it, is kept); a read-only file (no write permission) and text that cannot be encoded
   back are refused.
2. **Stage**: each new content goes to a temporary file beside its target
   (``.NAME.PID.RANDOM.bf16-migrate``), flushed and fsync'ed, with the target's permission bits.
   If any check or staging fails, every temporary is removed and *nothing* is committed: the
   tree is exactly as it was.
3. **Commit** by ``os.replace`` (one atomic rename per file, POSIX ``rename(2)``), Python files
   first, then the directory entries are fsync'ed, then the carriers (shell, Dockerfile, YAML,
   ``.env``, notebooks) that start them. Killed between the two phases, the tree holds cast
   scripts whose launchers still set the legacy variable: it still trains in bf16, and the next
   run finishes the launchers. SIGINT, SIGTERM and SIGHUP are held while staging and committing
   and reported once the commit is complete.

A temporary left by a run that was killed (its PID no longer running) is removed by the next run
over the same directory (:func:`remove_stale_temporaries`).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import signal
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TypeAlias

SUFFIX = ".bf16-migrate"
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}" + re.escape(SUFFIX) + "$")
# The temporaries of bf16-migrate 0.1 (``tempfile.mkstemp``: 8 random characters, no PID).
_OLD_TEMP = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}" + re.escape(SUFFIX) + "$")
OLD_TEMP_AGE = 3600.0
"""Seconds after which a temporary without a PID is taken to be stale."""
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class WriteRefused(Exception):
    """A planned write that must not be made (not a regular file, a symlink out of the given
    paths, text the file's encoding cannot hold). The message is one line naming the file."""


@dataclass(frozen=True)
class Write:
    """One file to replace: ``path`` as reported, ``target`` the regular file whose bytes change
    (``path`` itself, or the file a symlink points to), the new ``data`` (bytes), the target's
    permission bits ``mode``, ``in_place`` when the target has other hard links (its inode is
    kept), and ``phase`` (0: Python scripts and modules, 1: the carriers that start them).
    ``new``: the file does not exist yet (:func:`plan_new_file`); it is created without ever
    replacing a file that appeared in the meantime."""

    path: Path
    target: Path
    data: bytes
    mode: int
    in_place: bool
    phase: int
    new: bool = False


@dataclass
class CommitReport:
    """What a commit did: ``written`` (paths as reported, in commit order), ``failed`` (path ->
    one-line reason, for the writes that failed or were refused), ``not_written`` (every other
    planned path: held back because something failed), and ``signal`` (the name of a signal that
    arrived while the commit was held, e.g. ``"SIGINT"``, else None)."""

    written: list[Path] = field(default_factory=list)
    failed: dict[Path, str] = field(default_factory=dict)
    not_written: list[Path] = field(default_factory=list)
    signal: str | None = None


def _inside(target: Path, roots: list[Path]) -> bool:
    for root in roots:
        root = root.resolve()
        if target == root or root in target.parents:
            return True
    return False


def describe_file_type(mode: int) -> str:
    """A human name for the file type in ``st_mode`` ("FIFO", "character device", ...)."""
    for test, name in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISDIR, "directory"),
    ):
        if test(mode):
            return name
    return "special file"


def plan_write(path: Path, text: str, encoding: str, roots: list[Path], phase: int) -> Write:
    """Check that ``path`` may be replaced by ``text`` (encoded as ``encoding``) and return the
    :class:`Write`. ``roots``: the paths given on the command line (a symlink is written through
    only to a target inside them). Raises :class:`WriteRefused` otherwise."""
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise WriteRefused(
            f"{path}: cannot write: the new text cannot be encoded as {encoding} ({exc.reason})"
        ) from None
    return plan_bytes(path, data, roots, phase)


def plan_bytes(path: Path, data: bytes, roots: list[Path], phase: int) -> Write:
    """:func:`plan_write` for content given as bytes (``bf16-migrate --revert-failed`` puts the
    exact bytes a file had back). Same checks; raises :class:`WriteRefused`."""
    try:
        link = os.lstat(path)
        target = path.resolve(strict=True) if stat.S_ISLNK(link.st_mode) else path
        info = os.stat(target)
    except RuntimeError:  # pathlib's symlink loop
        raise WriteRefused(f"{path}: cannot write: symlink loop") from None
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else exc.strerror
        raise WriteRefused(f"{path}: cannot write: {reason}") from None
    if stat.S_ISLNK(link.st_mode) and not _inside(target, roots):
        raise WriteRefused(
            f"{path}: not written: it is a symlink to {target}, outside the paths given; migrate {target} itself "
            "(name it on the command line)"
        )
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused(f"{path}: not written: not a regular file ({describe_file_type(info.st_mode)})")
    if not info.st_mode & 0o222 or not os.access(target, os.W_OK):
        # a rename would replace it anyway (only the directory's permission counts); a file
        # marked read-only is one its owner does not want changed, as editors treat it
        raise WriteRefused(f"{path}: not written: the file is read-only")
    return Write(path, target, data, stat.S_IMODE(info.st_mode), info.st_nlink > 1, phase)


def plan_new_file(path: Path, text: str, phase: int) -> Write:
    """A :class:`Write` that creates ``path`` (UTF-8, permissions ``0o666`` less the umask, as
    ``open()`` creates files). Raises :class:`WriteRefused` when ``path`` exists (whatever it
    is) or its directory does not."""
    if os.path.lexists(path):
        raise WriteRefused(f"{path}: not written: a file of that name already exists")
    if not path.parent.is_dir():
        raise WriteRefused(f"{path}: cannot write: no directory {path.parent}")
    umask = os.umask(0)
    os.umask(umask)
    return Write(path, path, text.encode("utf-8"), 0o666 & ~umask, False, phase, new=True)


def _temporary_for(target: Path) -> tuple[int, Path]:
    while True:
        tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{SUFFIX}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


def _stage(write: Write) -> Path:
    fd, tmp = _temporary_for(write.target)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(write.data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, write.mode)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def _write_in_place(write: Write) -> None:
    """Overwrite a hard-linked file through its own inode, after its temporary is complete (so
    the disk space is known to be there)."""
    with open(write.target, "r+b") as f:
        f.write(write.data)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())


def commit(writes: list[Write]) -> CommitReport:
    """Stage then commit ``writes`` (see the module docstring). Never raises for an I/O error:
    each is a ``failed`` entry of the report."""
    report = CommitReport()
    ordered = sorted(writes, key=lambda w: (w.phase, str(w.path)))
    held = _HeldSignals()
    held.hold()
    staged: list[tuple[Write, Path]] = []
    try:
        for write in ordered:
            try:
                staged.append((write, _stage(write)))
            except OSError as exc:
                report.failed[write.path] = f"{write.path}: cannot write: {exc.strerror or exc}"
                break
        if report.failed:
            report.not_written = [w.path for w in ordered if w.path not in report.failed]
            return report
        phase = None
        for index, (write, tmp) in enumerate(staged):
            if phase is not None and write.phase != phase:
                for directory in sorted({w.target.parent for w, _ in staged if w.phase == phase}):
                    _fsync_dir(directory)
            phase = write.phase
            try:
                if write.in_place:
                    _write_in_place(write)
                    _unlink(tmp)
                elif write.new:  # a hard link fails on an existing name where a rename would replace it
                    os.link(tmp, write.target)
                    _unlink(tmp)
                else:
                    os.replace(tmp, write.target)
            except OSError as exc:
                report.failed[write.path] = f"{write.path}: cannot write: {exc.strerror or exc}"
                report.not_written = [w.path for w, _ in staged[index + 1 :]]
                break
            report.written.append(write.path)
        for directory in sorted({w.target.parent for w, _ in staged}):
            _fsync_dir(directory)
    finally:
        for write, tmp in staged:
            if write.path not in report.written:
                _unlink(tmp)
        report.signal = held.release()
    return report


_Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
"""What :func:`signal.signal` takes and returns (typeshed's ``signal._HANDLER``)."""


class _HeldSignals:
    """SIGINT, SIGTERM and SIGHUP recorded instead of acted on, from :meth:`hold` to
    :meth:`release`. Python-level handlers, not ``pthread_sigmask``: the kernel delivers a
    process signal to any thread that does not block it, and CPython then runs the handler in
    the main thread anyway; only the main thread can install handlers (elsewhere, nothing is
    held)."""

    def __init__(self) -> None:
        self.previous: dict[int, _Handler] = {}
        self.received: list[str] = []

    def hold(self) -> None:
        try:
            for signum in HELD_SIGNALS:
                self.previous[signum] = signal.signal(signum, self._record)
        except ValueError:  # not the main thread
            self.release()

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signal.Signals(signum).name)

    def release(self) -> str | None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous.clear()
        return self.received[0] if self.received else None


def is_temporary_name(name: str) -> bool:
    """Whether a file name is one of our temporaries (this version's or 0.1's)."""
    return name.endswith(SUFFIX) and bool(_TEMP.match(name) or _OLD_TEMP.match(name))


def remove_stale_temporaries(directories) -> list[Path]:
    """Remove the temporaries (``.NAME.PID.RANDOM.bf16-migrate``) that a killed run left in
    ``directories``, i.e. those whose PID is no longer a running process (a PID-less one of
    version 0.1 when older than :data:`OLD_TEMP_AGE`). Returns the paths removed. A temporary of
    a run still going (another bf16-migrate at the same time) is kept."""
    removed = []
    now = time.time()
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if not name.endswith(SUFFIX):
                continue
            match = _TEMP.match(name)
            path = Path(directory) / name
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode):
                    continue
                if match:
                    if _alive(int(match["pid"])):
                        continue
                elif not _OLD_TEMP.match(name) or now - info.st_mtime < OLD_TEMP_AGE:
                    continue
                os.unlink(path)
                removed.append(path)
            except OSError:
                continue
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a PID reused by this very run: nothing of ours is staged yet
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
