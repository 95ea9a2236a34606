"""The byte prefilter: which files name a legacy variable, read as bytes, before anything parses them.

:func:`mentions_legacy` answers for one file. :func:`mentioning` answers for the files of a
directory walk. On a large tree it reads them in two processes, so that the import of the codemod
(libcst, about a third of a second) can overlap the rest of the reading: :func:`mentioning` calls
its ``on_found`` as soon as one file is known to name a variable.

A file with a NUL byte in its first 8 KiB is binary, or UTF-16/32 text. Its first 16 MiB are
searched for the names in ASCII and in UTF-16, and the rest is not read. A match is reported,
since such a file cannot be rewritten. A text file is read whole, in 1 MiB chunks that overlap by
the length of two names, into one buffer per thread that is reused from file to file. So a large
data file costs no memory, and a small file costs no allocation.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence

from . import prefilter_fork, workers
from .rule_files import variable_names

LEGACY_MARKERS = tuple(name.encode() for name in variable_names())
"""The legacy variables' names, as bytes (``rules/XLA_*.toml``: one directory listing, no rule parsed)."""

_HEAD = 8192  # a NUL in these first bytes makes a file binary (as git and grep decide)
_CHUNK = 1 << 20
_BINARY_LIMIT = 16 << 20
_OVERLAP = 2 * max(map(len, LEGACY_MARKERS))
_WIDE_MARKERS = tuple(m.decode().encode(codec) for m in LEGACY_MARKERS for codec in ("utf-16-le", "utf-16-be"))


def _shared_start(markers: tuple[bytes, ...]) -> bytes:
    """The longest start every marker has: ``b"XLA_"`` (the rules are ``XLA_*.toml``)."""
    first, last = min(markers), max(markers)
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]


_ANY_MARKER = _shared_start(LEGACY_MARKERS)  # every legacy name starts so: one C-level search rules a file out
# "XLA_" in ASCII, and "X\0L\0A\0_", which both UTF-16 spellings of "XLA_" contain (it ends in a
# byte that is rare in binary data; measured on 238 MB of shared libraries, re's search for the
# two is faster than two bytes.find calls)
_WIDE_PREFIX = re.compile(re.escape(_ANY_MARKER) + b"|" + re.escape(_ANY_MARKER.decode().encode("utf-16-le")[:-1]))
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
_local = threading.local()


def _buffer() -> tuple[bytearray, memoryview]:
    """This thread's read buffer (``_OVERLAP`` + 1 MiB; its pages are touched only as far as
    files fill it)."""
    kept = getattr(_local, "buffer", None)
    if kept is None:
        data = bytearray(_OVERLAP + _CHUNK)
        kept = _local.buffer = (data, memoryview(data))
    return kept


def _read_into(fd: int, view: memoryview) -> int:
    """``os.readv(fd, [view])``; where there is no ``readv`` (Windows), a read and a copy."""
    data = os.read(fd, len(view))
    view[: len(data)] = data
    return len(data)


_readinto = (lambda fd, view: os.readv(fd, [view])) if hasattr(os, "readv") else _read_into


def _fill(fd: int, view: memoryview, start: int) -> int:
    """Read from ``fd`` into ``view[start:]`` until it is full or the file ends; the number of bytes read."""
    got = 0
    while start + got < len(view):
        n = _readinto(fd, view[start + got :])
        if not n:
            break
        got += n
    return got


def _names_one(data: bytearray, end: int, markers: tuple[bytes, ...]) -> bool:
    return any(data.find(marker, 0, end) >= 0 for marker in markers)


def mentions_legacy(path) -> bool:
    """Whether the bytes of the regular file ``path`` (a str or a Path) name a legacy variable
    (``XLA_USE_BF16``, ...: the names of ``rules/XLA_*.toml``). True too when the file cannot be
    opened or read, so that the reader reports it with its reason. A file with a NUL in its first
    8 KiB (binary, or UTF-16) is searched for the names in ASCII and UTF-16 in its first 16 MiB
    only."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return True
    try:
        data, view = _buffer()
        full = len(data) - _OVERLAP
        got = _fill(fd, view[:full], 0)
        end = got
        binary = data.find(b"\0", 0, min(end, _HEAD)) >= 0
        total = got
        while True:
            if binary:
                if _WIDE_PREFIX.search(data, 0, end) and _names_one(data, end, LEGACY_MARKERS + _WIDE_MARKERS):
                    return True
                if total >= _BINARY_LIMIT:
                    return False
            elif data.find(_ANY_MARKER, 0, end) >= 0 and _names_one(data, end, LEGACY_MARKERS):
                return True
            if got < full:
                return False  # the file ended
            # keep the last bytes (a name across two chunks), read the next chunk after them
            keep = min(end, _OVERLAP)
            data[:keep] = data[end - keep : end]
            got = _fill(fd, view[: keep + full], keep)
            if not got:
                return False
            end = keep + got
            total += got
    except OSError:
        return True
    finally:
        os.close(fd)


PARALLEL_FROM = 2000
"""Below this many files, :func:`mentioning` reads them in this process (a fork costs more than
it saves)."""

PREPARE_FROM = 20000
"""From this many files on, :func:`mentioning` calls ``on_found`` at once, before anything is
found, so that the codemod's import overlaps the reading whatever the place of the first file
that names a variable. Found on a 2-core machine: listing and reading cost about 2 and 12 µs a
file, the import 0.31 s; a run over a tree with no legacy variable then stays within 1.5x of
``grep -rlE`` over the same files from about 20,000 files on (at 34,000, 0.49 s where it
would be 0.34 s), while a run whose only legacy file is read last gains the whole import
(0.58 s where it would be 0.69 s)."""


def mentioning(names: Sequence[str], on_found: Callable[[], None] | None = None) -> list[str]:
    """Those of ``names`` (paths of regular files, as str) whose bytes name a legacy variable
    (:func:`mentions_legacy`), in the order of ``names``. ``on_found`` is called at most once, in
    this process, as soon as one is known, while the other files may still be being read (the
    command line imports the codemod then); never when none is found, unless the list is very
    long (:data:`PREPARE_FROM`) and the files are read in two processes: then at once.

    From :data:`PARALLEL_FROM` files on, with two cores or more to fork to
    (:func:`bf16_migrate.workers.fork_workers`), the files are read in two processes
    (:func:`bf16_migrate.prefilter_fork.read_forked`): a forked child from the front of the list,
    this process from the back. The two meet wherever
    the work takes them, so this process can stop to run ``on_found`` while the child reads on."""
    if len(names) >= PARALLEL_FROM and workers.fork_workers() >= 2:
        return prefilter_fork.read_forked(names, mentions_legacy, on_found, at_once=len(names) >= PREPARE_FROM)
    found: list[str] = []
    for name in names:
        if mentions_legacy(name):
            if on_found is not None and not found:
                on_found()
            found.append(name)
    return found
