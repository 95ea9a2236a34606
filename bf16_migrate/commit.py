"""Write a run's changes as one change: stage every file, then commit them in a safe order.

A migration touches several files that depend on each other: a launcher whose
``XLA_USE_BF16=1`` was removed relies on the script it starts having been cast to bf16. Written
one at a time, a failed write or a ``kill -9`` between two writes could leave the launcher
migrated and the script not, and the job would train in FP32 without a word. So:

1. **Check** every target (:func:`plan_write`): every symlink along its path is resolved, and
   the file it really is must lie inside the paths given (:class:`bf16_migrate.bounds.Bounds`);
   only a regular file is written; its bytes must still be those the run read (an edit made
   while the run was planning is never overwritten: lost updates); a file with several hard
   links is written in place (its inode, and so every other name of it, is kept); a read-only
   file (no write permission) and text that cannot be encoded back are refused.
2. **Stage**: each new content goes to a temporary file beside its target
   (``.NAME.PID.RANDOM.bf16-migrate``), flushed and fsync'ed, with the target's permission bits.
   For a hard-linked file, written in place, the disk space its new content needs is reserved
   on its own inode instead (``fallocate(2)`` with ``FALLOC_FL_KEEP_SIZE``: the file's bytes,
   size and modification time stay as they are), so a full disk is found here and not halfway
   through the overwrite. If any check or staging fails, every temporary is removed and
   *nothing* is committed: the tree is exactly as it was.
3. **Commit** by ``os.replace`` (one atomic rename per file, POSIX ``rename(2)``), Python files
   first, then the directory entries are fsync'ed, then the carriers (shell, Dockerfile, YAML,
   ``.env``, notebooks) that start them. Just before the first rename, and again before each
   file, its inode, size, link count and modification time must be those checked in step 1;
   a file changed meanwhile is that file's error and nothing after it is committed. Killed
   between the two phases, the tree holds cast scripts whose launchers still set the legacy
   variable: it still trains in bf16, and the next run finishes the launchers. SIGINT, SIGTERM
   and SIGHUP are held while staging and committing and reported once the commit is complete.
   An in-place overwrite that fails all the same (an I/O error) puts the old bytes back.

A temporary left by a run that was killed (its PID no longer running) is removed by the next run
over the same directory (:func:`remove_stale_temporaries`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import secrets
import signal
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TypeAlias

from . import escaped_bytes  # noqa: F401 (registers the utf-8+bytes codec the carriers are written with)
from .bounds import Bounds

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


Stamp: TypeAlias = tuple[int, int, int, int, int]
"""What identifies a file's state cheaply: ``(st_dev, st_ino, st_size, st_mtime_ns, st_nlink)``."""


@dataclass(frozen=True)
class Write:
    """One file to replace: ``path`` as reported, ``target`` the regular file whose bytes change
    (``path`` with every symlink resolved), the new ``data`` (bytes), the target's permission
    bits ``mode``, ``in_place`` when the target has other hard links (its inode is kept), and
    ``phase`` (0: Python scripts and modules, 1: the carriers that start them).
    ``new``: the file does not exist yet (:func:`plan_new_file`); it is created without ever
    replacing a file that appeared in the meantime. ``expected``: the bytes the target held when
    it was checked (None: not checked), and ``stamp`` its :data:`Stamp` then; the commit writes
    the file only while both still hold. ``owner``: the target's (uid, gid) when they are not
    this process's: the temporary is given them before the rename (as root), or the file is
    written in place (anyone else), so the file keeps its owner."""

    path: Path
    target: Path
    data: bytes
    mode: int
    in_place: bool
    phase: int
    new: bool = False
    expected: bytes | None = None
    stamp: Stamp | None = None
    owner: tuple[int, int] | None = None


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


def _stamp(info: os.stat_result) -> Stamp:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_nlink)


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


def plan_write(
    path: Path, text: str, encoding: str, roots: list[Path] | Bounds, phase: int, old: str | None = None
) -> Write:
    """Check that ``path`` may be replaced by ``text`` (encoded as ``encoding``) and return the
    :class:`Write`. ``roots``: the paths given on the command line (the file, every symlink
    resolved, must lie inside them: :class:`bf16_migrate.bounds.Bounds`). ``old``: the text the
    run read from ``path``; when given, the file's bytes must still be ``old`` encoded as
    ``encoding`` (else it was edited after it was read, and writing would lose that edit).
    Raises :class:`WriteRefused` otherwise."""
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise WriteRefused(
            f"{path}: cannot write: the new text cannot be encoded as {encoding} ({exc.reason})"
        ) from None
    expected = None if old is None else _encoded(path, old, encoding)
    try:
        return plan_bytes(path, data, roots, phase, expected=expected)
    except WriteRefused:
        if expected is not None:
            _refuse_unfaithful(path, old or "", encoding, expected)
        raise


def _encoded(path: Path, old: str, encoding: str) -> bytes:
    try:
        return old.encode(encoding)
    except UnicodeEncodeError:  # pragma: no cover - the text was decoded with this very codec
        raise WriteRefused(f"{path}: cannot write: its text does not encode back as {encoding}") from None


def _refuse_unfaithful(path: Path, old: str, encoding: str, expected: bytes) -> None:
    """Raise :class:`WriteRefused` when ``path`` still holds the text read but not the bytes it
    encodes back to: its codec maps two byte sequences to one character (cp932's duplicated NEC
    and IBM rows: ``0x8790`` and ``0x81E0`` are both U+2252), so writing it would change lines
    the migration never touched. Returns when that is not why the file was refused."""
    try:
        with open(path, "rb") as f:
            current = f.read()
        if current == expected or current.decode(encoding) != old:
            return
    except (OSError, UnicodeDecodeError, LookupError):
        return
    pairs = zip(current.splitlines(), expected.splitlines())
    line = next((n for n, (a, b) in enumerate(pairs, 1) if a != b), 1)
    raise WriteRefused(
        f"{path}:{line}: not written: its bytes do not survive a round trip through {encoding} (two byte sequences "
        "there decode to the same character), so writing it would change lines bf16-migrate did not touch; edit it "
        "by hand or convert it to UTF-8"
    ) from None


def plan_bytes(path: Path, data: bytes, roots: list[Path] | Bounds, phase: int, expected: bytes | None = None) -> Write:
    """:func:`plan_write` for content given as bytes (``bf16-migrate --revert-failed`` puts the
    exact bytes a file had back): the same checks; ``expected``, when given, the bytes the file
    must hold now. Raises :class:`WriteRefused`."""
    try:
        link = os.lstat(path)
        target = path.resolve(strict=True)
    except RuntimeError:  # pathlib's symlink loop
        raise WriteRefused(f"{path}: cannot write: symlink loop") from None
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else exc.strerror
        raise WriteRefused(f"{path}: cannot write: {reason}") from None
    real = (roots if isinstance(roots, Bounds) else Bounds(roots)).outside(path)
    if real is not None:
        what = "a symlink to" if stat.S_ISLNK(link.st_mode) else "through a symlinked directory, the file"
        raise WriteRefused(
            f"{path}: not written: it is {what} {real}, outside the paths given; migrate {real} itself "
            "(name it on the command line)"
        )
    current, info = _read_regular(path, target)
    if not info.st_mode & 0o222 or not os.access(target, os.W_OK):
        # a rename would replace it anyway (only the directory's permission counts); a file
        # marked read-only is one its owner does not want changed, as editors treat it
        raise WriteRefused(f"{path}: not written: the file is read-only")
    if expected is not None and current != expected:
        raise WriteRefused(
            f"{path}: not written: it changed after bf16-migrate read it (edited meanwhile?), so its edit is kept; "
            "run again on what it holds now"
        )
    # a rename gives the file the owner of whoever runs bf16-migrate: root keeps the owner by
    # chown(2) on the temporary, anyone else by writing in place (as for a hard link)
    foreign = (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid())
    return Write(
        path,
        target,
        data,
        stat.S_IMODE(info.st_mode),
        info.st_nlink > 1 or (foreign and os.geteuid() != 0),
        phase,
        expected=current,
        stamp=_stamp(info),
        owner=(info.st_uid, info.st_gid) if foreign else None,
    )


def _read_regular(path: Path, target: Path) -> tuple[bytes, os.stat_result]:
    """The bytes and ``fstat`` of the regular file ``target`` (never opened if it is not one:
    non-blocking, checked with ``fstat`` first). Raises :class:`WriteRefused`."""
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise WriteRefused(f"{path}: cannot write: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WriteRefused(f"{path}: not written: not a regular file ({describe_file_type(info.st_mode)})")
        return _read_all(fd), info
    except OSError as exc:
        raise WriteRefused(f"{path}: cannot write: {exc.strerror}") from None
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


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
    """A new temporary beside ``target``, opened for writing: ``.NAME.PID.RANDOM.bf16-migrate``,
    NAME cut short (by bytes, as the filesystem counts) so that the whole name fits its
    directory's name limit (``pathconf(_PC_NAME_MAX)``, 255 on Linux filesystems): a file whose
    own name is near that limit can still be staged."""
    try:
        limit = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    while True:
        tail = f".{os.getpid()}.{secrets.token_hex(4)}{SUFFIX}"
        room = max(1, limit - len(tail.encode()) - 1)
        stem = os.fsencode(target.name)[:room].decode(errors="ignore") or "_"
        tmp = target.parent / f".{stem}{tail}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


def _stage(write: Write) -> Path | None:
    """Stage ``write``: its temporary (returned), or for a write in place the space its new
    content needs, reserved on the target's inode (None). Raises ``OSError``."""
    if write.in_place:
        _reserve(write)
        return None
    fd, tmp = _temporary_for(write.target)
    try:
        try:
            _pwrite_all(fd, write.data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if write.owner is not None:
            os.chown(tmp, *write.owner)
        os.chmod(tmp, write.mode)  # after chown(2), which clears the set-user-ID and set-group-ID bits
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


class _Changed(Exception):
    """A target no longer is what :func:`plan_bytes` checked."""


def _check_unchanged(write: Write) -> None:
    """Raise :class:`_Changed` when ``write``'s target is no longer the file that was checked
    (another inode, size, link count or modification time), or it vanished."""
    if write.stamp is None:
        return
    try:
        info = os.stat(write.target)
    except OSError:
        raise _Changed from None
    if _stamp(info) != write.stamp:
        raise _Changed


_FALLOC_FL_KEEP_SIZE = 1  # linux/falloc.h


def _reserve(write: Write) -> None:
    """Reserve the disk blocks of ``write.target`` up to ``len(write.data)`` bytes without
    changing its bytes, size or modification time (:func:`_fallocate`). Raises ``OSError``
    (``ENOSPC``; ``EOPNOTSUPP`` where the filesystem or platform cannot reserve space: the file
    is then not written, as a cut-short overwrite could not be ruled out) or :class:`_Changed`."""
    fd = os.open(write.target, os.O_RDWR)
    try:
        info = os.fstat(fd)
        if write.stamp is not None and _stamp(info) != write.stamp:
            raise _Changed
        if write.data:
            _fallocate(fd, len(write.data))
        os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))  # fallocate(2) touched it; nothing was written
    finally:
        os.close(fd)


def _fallocate(fd: int, length: int) -> None:
    """Linux ``fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, length)``: the blocks of the first
    ``length`` bytes allocated, the file's size unchanged. ``os.posix_fallocate`` has no mode
    argument and extends the file with zeros (which a ``kill -9`` could leave behind), so libc's
    ``fallocate`` is called through ctypes. Raises ``OSError``."""
    try:
        function = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        raise OSError(
            errno.EOPNOTSUPP, "it has other hard links and this platform cannot reserve disk space for it"
        ) from None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if function(fd, _FALLOC_FL_KEEP_SIZE, 0, length) != 0:
        code = ctypes.get_errno()
        if code in (errno.EOPNOTSUPP, errno.ENOSYS):
            raise OSError(code, "it has other hard links and its filesystem cannot reserve disk space for an overwrite")
        raise OSError(code, os.strerror(code))


def _release(write: Write) -> None:
    """Give back the blocks :func:`_reserve` took beyond the end of a file that was not written
    (truncating a file to its own size frees them; its modification time is put back)."""
    try:
        fd = os.open(write.target, os.O_RDWR)
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if write.stamp is None or _stamp(info) == write.stamp:
            os.ftruncate(fd, info.st_size)
            os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
    except OSError:
        pass
    finally:
        os.close(fd)


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
    """Overwrite a hard-linked file through its own inode, whose space :func:`_reserve` took.
    Its bytes must still be ``write.expected`` (else :class:`_Changed`). If the overwrite fails
    all the same, the old bytes are put back; raises ``OSError`` saying whether they were."""
    fd = os.open(write.target, os.O_RDWR)
    try:
        if write.expected is not None and _read_all(fd) != write.expected:
            raise _Changed
        try:
            _pwrite_all(fd, write.data)
            os.ftruncate(fd, len(write.data))
            os.fsync(fd)
        except OSError as exc:
            raise OSError(exc.errno, f"{exc.strerror or exc}{_put_back(fd, write)}") from None
    finally:
        os.close(fd)


def _pwrite_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    offset = 0
    while offset < len(data):
        offset += os.pwrite(fd, view[offset:], offset)


def _put_back(fd: int, write: Write) -> str:
    """After a failed overwrite: the old bytes written back; what became of them, for the message."""
    old = write.expected if write.expected is not None else b""
    try:
        _pwrite_all(fd, old)
        os.ftruncate(fd, len(old))
        os.fsync(fd)
        return " (its old content was put back)"
    except OSError as exc:
        for directory in (write.target.parent, Path(tempfile.gettempdir())):
            try:
                fd_copy, copy = tempfile.mkstemp(
                    prefix=f"{write.target.name}.", suffix=".before-bf16-migrate", dir=directory
                )
                with os.fdopen(fd_copy, "wb") as f:
                    f.write(old)
                return f" and its old content could not be put back ({exc.strerror}): it is saved in {copy}"
            except OSError:
                continue
        return f" and its old content could not be put back ({exc.strerror}) nor saved"


def commit(writes: list[Write]) -> CommitReport:
    """Stage then commit ``writes`` (see the module docstring). Never raises for an I/O error:
    each is a ``failed`` entry of the report."""
    report = CommitReport()
    ordered = sorted(writes, key=lambda w: (w.phase, str(w.path)))
    held = _HeldSignals()
    held.hold()
    staged: list[tuple[Write, Path | None]] = []
    try:
        for write in ordered:
            try:
                staged.append((write, _stage(write)))
            except _Changed:
                report.failed[write.path] = _changed(write)
                break
            except OSError as exc:
                report.failed[write.path] = f"{write.path}: cannot write: {exc.strerror or exc}"
                break
        for write, _tmp in staged if not report.failed else ():
            try:
                _check_unchanged(write)  # every file, before the first one is committed
            except _Changed:
                report.failed[write.path] = _changed(write)
                break
        if report.failed:
            report.not_written = [w.path for w in ordered if w.path not in report.failed]
            return report
        _commit_staged(staged, report)
    finally:
        for write, tmp in staged:
            if write.path in report.written:
                continue
            if tmp is not None:
                _unlink(tmp)
            elif write.in_place:
                _release(write)
        report.signal = held.release()
    return report


def _changed(write: Write) -> str:
    return f"{write.path}: not written: it changed while bf16-migrate was writing (edited meanwhile?); run again"


def _commit_staged(staged: list[tuple[Write, Path | None]], report: CommitReport) -> None:
    """The renames (and overwrites in place) of :func:`commit`, in order; the first failure
    stops it, and what follows is ``not_written``."""
    phase = None
    for index, (write, tmp) in enumerate(staged):
        if phase is not None and write.phase != phase:
            for directory in sorted({w.target.parent for w, _ in staged if w.phase == phase}):
                _fsync_dir(directory)
        phase = write.phase
        try:
            _check_unchanged(write)
            if write.in_place:
                _write_in_place(write)
            elif write.new:  # a hard link fails on an existing name where a rename would replace it
                assert tmp is not None, "a new file is staged in a temporary"
                os.link(tmp, write.target)
                _unlink(tmp)
            else:
                assert tmp is not None, "a file replaced by a rename is staged in a temporary"
                os.replace(tmp, write.target)
        except (OSError, _Changed) as exc:
            if isinstance(exc, _Changed):
                report.failed[write.path] = _changed(write)
            else:
                report.failed[write.path] = f"{write.path}: cannot write: {exc.strerror or exc}"
            report.not_written = [w.path for w, _ in staged[index + 1 :]]
            break
        report.written.append(write.path)
    for directory in sorted({w.target.parent for w, _ in staged}):
        _fsync_dir(directory)


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
