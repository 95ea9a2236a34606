"""Each verify run's own working copy of the directory it runs in (the script's, or the package's top).

A run writes what the script writes with relative paths (checkpoints, ``.npy`` outputs, logs) into its
working directory. Run in the user's directory, or in a directory of symlinks to its entries, those
writes land in the user's tree (``open(path, "wb")`` or ``torch.save`` through a symlink truncates the
user's file) and the runs, up to three at once, read each other's files: a run that resumes from
``ckpt/last.pt`` resumed from the checkpoint another run had just written (bench/unseen/hunt9
FINDINGS.md, G14). :func:`working_copy` makes the copy each run starts from:

* directories are real directories of the copy (made again), so a file a run creates lands in the
  copy;
* regular files are copied (``shutil.copy2``) while they fit the :class:`Budget`: at most
  :data:`FILE_BYTES` each and :data:`TOTAL_BYTES` per copy, walked breadth first (the entries beside
  the script first), at most :data:`ENTRIES` entries in all;
* what does not fit stays a symlink to the user's entry and is listed (:class:`Linked`): files
  larger than the budget (data sets), directories with more than :data:`DIR_ENTRIES` entries, those
  left when :data:`ENTRIES` is reached, and the version-control and environment directories
  (:data:`LINKED_WHOLE`), linked as one entry each; a run that writes one of them writes the user's
  file, and verify's report says so once (:func:`linked_note`);
* ``__pycache__`` is left out (Python writes the copy's own bytecode); a dangling symlink, a FIFO, a
  socket or a device is left out too (nothing is read or written through them), and so are verify's
  own temporary directories (:func:`.scratch.is_scratch`) and the copy itself: a script in the
  temporary directory, or ``TMPDIR`` inside the script's directory, would otherwise copy the
  workspace into itself.

Standard library only (:mod:`os`, :mod:`shutil`). The copies live in verify's workspace and are
removed with it (:mod:`.scratch`).
"""

from __future__ import annotations

import os
import shutil
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .scratch import is_scratch

__all__ = [
    "DEFAULT_BUDGET",
    "DIR_ENTRIES",
    "ENTRIES",
    "FILE_BYTES",
    "LEFT_OUT",
    "LINKED_WHOLE",
    "TOTAL_BYTES",
    "Budget",
    "Linked",
    "WorkCopy",
    "linked_note",
    "working_copy",
]

MIB = 1 << 20

FILE_BYTES = 8 * MIB
"""A regular file larger than this (bytes) is linked, not copied: code, configurations, small
checkpoints and ``.npy`` outputs of the scripts verify runs for a few steps are far below it; the data
sets and pretrained weights above it are read, not written, by a training script."""

TOTAL_BYTES = 64 * MIB
"""Bytes copied into one working copy at most (a verify makes up to four copies at once, in the
temporary directory, which may be memory: 256 MB at worst)."""

DIR_ENTRIES = 1000
"""A directory (below the top) holding more entries than this is linked whole: a directory of
thousands of files is a data set (images, shards), not what a run writes."""

ENTRIES = 5000
"""Entries (files and directories) walked per copy at most; past it, what is left is linked (a
script at the top of a large repository)."""

LINKED_WHOLE = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".tox", ".nox", ".mypy_cache"})
"""Directories linked as one entry whatever their size: version control (a script that asks git for
its commit still finds it) and environments and tool caches, which a training run reads at most."""

LEFT_OUT = frozenset({"__pycache__"})
"""Directories neither copied nor linked: Python writes the copy's bytecode there itself (linked, the
copy's modules would write their bytecode into the user's ``__pycache__``)."""


@dataclass(frozen=True)
class Budget:
    """What one working copy copies at most (the module's constants by default): ``file_bytes`` per
    file, ``total_bytes`` in all, ``dir_entries`` entries of a directory below the top, ``entries``
    entries walked in all. Raises ``ValueError`` for a negative figure."""

    file_bytes: int = FILE_BYTES
    total_bytes: int = TOTAL_BYTES
    dir_entries: int = DIR_ENTRIES
    entries: int = ENTRIES

    def __post_init__(self) -> None:
        for name in ("file_bytes", "total_bytes", "dir_entries", "entries"):
            if getattr(self, name) < 0:
                raise ValueError(f"Budget.{name} must be 0 or more, got {getattr(self, name)}")


DEFAULT_BUDGET = Budget()


@dataclass(frozen=True)
class Linked:
    """An entry of the user's directory that a working copy links instead of copying: ``path``, the
    user's path (as reached from the copied directory: a symlink of the user's is not resolved);
    ``size``, bytes of a file, None for a directory linked whole; ``why``, in words."""

    path: Path
    size: int | None
    why: str


@dataclass
class WorkCopy:
    """What :func:`working_copy` made: ``copied`` files and their ``copied_bytes``, and the entries it
    ``linked`` (:class:`Linked`), in the order met."""

    copied: int = 0
    copied_bytes: int = 0
    linked: list[Linked] = field(default_factory=list)


def working_copy(source: Path, dest: Path, *, skip: Collection[str] = (), budget: Budget = DEFAULT_BUDGET) -> WorkCopy:
    """Make ``dest`` (created when missing) a working copy of the directory ``source`` (the module's
    rules: directories made again, files copied within ``budget``, the rest linked and listed);
    ``skip``: names at the top of ``source`` left out (the staged script, written by the caller).
    Symlinks in ``source`` are followed (a link to a directory is copied as the directory; one that
    leads back into a directory being copied is linked). An entry that cannot be read is linked;
    one that cannot be linked either is left out. Raises ``OSError`` when ``dest`` cannot be made
    or ``source`` cannot be listed."""
    made = WorkCopy()
    dest.mkdir(parents=True, exist_ok=True)
    seen_dest = os.path.realpath(dest)
    seen = {os.path.realpath(source), seen_dest}
    walked = 0
    queue: deque[tuple[Path, Path]] = deque([(Path(source), Path(dest))])
    while queue:
        src_dir, dst_dir = queue.popleft()
        listed = _entries(src_dir, strict=dst_dir == dest)
        why = None if dst_dir == dest else _linked_whole(listed, walked, budget)
        if why is not None or listed is None:
            _link(src_dir, dst_dir, made, None, why or "it cannot be listed")
            continue
        entries = listed
        if dst_dir != dest:
            try:
                dst_dir.mkdir()
            except OSError as exc:  # a name too long for the temporary directory's file system
                _link(src_dir, dst_dir, made, None, f"it cannot be made in the copy ({exc.strerror})")
                continue
        for entry in entries:
            if dst_dir == dest and entry.name in skip or entry.name in LEFT_OUT or is_scratch(entry.name):
                continue
            walked += 1
            src, dst = Path(entry.path), dst_dir / entry.name
            try:
                is_dir, is_file = entry.is_dir(), entry.is_file()
            except OSError:
                continue
            if is_dir:
                real = os.path.realpath(src)
                if real == seen_dest:
                    continue
                if entry.name in LINKED_WHOLE:
                    _link(src, dst, made, None, "a version-control or environment directory")
                elif real in seen:
                    _link(src, dst, made, None, "it leads back into a directory of the copy")
                else:
                    seen.add(real)
                    queue.append((src, dst))
            elif is_file:
                _file(src, dst, made, budget, walked > budget.entries)
    return made


def _linked_whole(listed: list[os.DirEntry[str]] | None, walked: int, budget: Budget) -> str | None:
    """Why a directory below the top (its entries ``listed``, None: unreadable) is linked whole, after
    ``walked`` entries of the copy; None when it is copied."""
    if listed is None:
        return "it cannot be listed"
    if len(listed) > budget.dir_entries:
        return f"it holds {len(listed)} entries (more than {budget.dir_entries})"
    if walked >= budget.entries:
        return f"the copy reached its {budget.entries} entries"
    return None


def _entries(directory: Path, strict: bool = False) -> list[os.DirEntry[str]] | None:
    """The entries of ``directory`` by name; None when it cannot be listed (``strict``: raise)."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        if strict:
            raise
        return None


def _file(src: Path, dst: Path, made: WorkCopy, budget: Budget, past_entries: bool) -> None:
    """Copy the file ``src`` to ``dst`` when it fits ``budget`` (else link it, listed in ``made``)."""
    try:
        size = os.stat(src).st_size
    except OSError:
        return
    if past_entries:
        _link(src, dst, made, size, f"the copy reached its {budget.entries} entries")
    elif size > budget.file_bytes:
        _link(src, dst, made, size, f"larger than {_mb(budget.file_bytes)} a file")
    elif made.copied_bytes + size > budget.total_bytes:
        _link(src, dst, made, size, f"the copy reached its {_mb(budget.total_bytes)}")
    else:
        try:
            shutil.copy2(src, dst)
        except OSError:
            _link(src, dst, made, size, "it cannot be read")
            return
        made.copied += 1
        made.copied_bytes += size


def _link(src: Path, dst: Path, made: WorkCopy, size: int | None, why: str) -> None:
    """``dst`` a symlink to ``src``, listed in ``made``; nothing when the link cannot be made."""
    try:
        if dst.is_symlink() or dst.is_file():
            dst.unlink()
        os.symlink(src, dst)
    except OSError:
        return
    made.linked.append(Linked(src, size, why))


def _mb(size: int) -> str:
    return f"{size / MIB:.1f} MB" if size >= MIB // 10 or size == 0 else f"{size} bytes"


def linked_note(linked: Iterable[Linked], shown: int = 5) -> str | None:
    """The one note of a verify report on what its runs' working copies linked instead of copying
    (``linked``, duplicates merged by path; the first ``shown`` paths named), or None when nothing
    was: a run that writes one of them writes the user's file."""
    by_path: dict[Path, Linked] = {}
    for item in linked:
        by_path.setdefault(item.path, item)
    if not by_path:
        return None
    files = [i for i in by_path.values() if i.size is not None]
    dirs = [i for i in by_path.values() if i.size is None]
    counts = []
    if files:
        size = sum(i.size or 0 for i in files)
        counts.append(f"{len(files)} file{'s' if len(files) != 1 else ''} ({_mb(size)})")
    if dirs:
        counts.append(f"{len(dirs)} director{'ies' if len(dirs) != 1 else 'y'}")
    ordered = files + dirs
    names = ", ".join(f"{i.path}{'/' if i.size is None else ''} ({i.why})" for i in ordered[:shown])
    more = f", and {len(ordered) - shown} more" if len(ordered) > shown else ""
    return (
        f"Each run ran in its own working copy of the script's directory, but {' and '.join(counts)} of it "
        f"{'were' if len(ordered) != 1 else 'was'} linked, not copied: a run that writes them writes your files "
        f"({names}{more})."
    )
