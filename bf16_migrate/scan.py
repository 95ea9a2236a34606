"""Paths -> the files to look at, each with its kind.

Directories are walked recursively (hidden directories other than CI configuration ones such as
``.github``, virtual environments, ``__pycache__``, ``node_modules`` and ``*.egg-info`` packaging
metadata are skipped; ``--exclude`` globs apply to the name or the path relative to the argument, of
files and of directories, whose whole content is then skipped).
A byte prefilter keeps only files that name a legacy variable, so large trees scan fast. A file
with a NUL byte in its first 8 KiB is binary or UTF-16/32: its first 16 MiB are searched for the
names in ASCII and in UTF-16 (a match is reported, since such a file cannot be rewritten), the
rest is not read. Only regular files are opened: a FIFO, device or socket of a kind bf16-migrate
handles, a dangling symlink or a symlink loop is a candidate with a ``problem`` (reported as that
file's error), never read. Our own temporaries (``.NAME.PID.RANDOM.bf16-migrate``) are skipped. Kinds
come from the name (``*.py``, ``*.sh``/``*.bash``, ``Dockerfile*``, ``*.yaml``/``*.yml``,
``.env``/``*.env``, ``*.ipynb``, documentation) or, for an extensionless file, from its ``#!``
line. Every other text file that names a variable is a candidate too (``"unsupported"``): the
tool is never silent about a file that names a legacy variable.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from dataclasses import dataclass
from pathlib import Path

LEGACY_MARKERS = (b"XLA_USE_BF16", b"XLA_DOWNCAST_BF16", b"XLA_USE_FP16", b"XLA_DOWNCAST_FP16")
SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "build", "dist"}


class ScanError(Exception):
    """A path given on the command line does not exist (the message names it)."""


@dataclass(frozen=True)
class Candidate:
    """A file to process: ``kind`` is ``"python"``, a carrier kind (``"shell"``,
    ``"dockerfile"``, ``"yaml"``, ``"dotenv"``, ``"notebook"``: see :mod:`bf16_migrate.carriers`),
    ``"docs"`` (documentation: reported, BFM091) or ``"unsupported"`` (a file that names a
    legacy variable but whose kind bf16-migrate does not rewrite, e.g. a Makefile, a TOML or
    jsonnet file, an unknown extension: reported, BFM090). See :mod:`bf16_migrate.mentions`."""

    path: Path
    kind: str
    problem: str | None = None
    """Why the file cannot be read (not a regular file, a symlink loop): reported, never opened."""


SHELL_SUFFIXES = {".sh", ".bash", ".zsh", ".slurm", ".sbatch"}
# Files that can carry an environment setting but that bf16-migrate does not parse: reported.
UNSUPPORTED_SUFFIXES = {".cfg", ".ini", ".toml", ".json", ".mk"}
UNSUPPORTED_NAMES = ("Makefile", "makefile", "GNUmakefile")
# Documentation: prose that may tell readers to set a variable (reported, never rewritten).
DOC_SUFFIXES = {".md", ".mdx", ".rst", ".txt", ".html", ".htm", ".adoc"}
DOC_NAMES = ("README", "CHANGELOG", "CHANGES", "NEWS", "HISTORY")  # extensionless documentation
SHELL_INTERPRETERS = {"sh", "bash", "zsh", "dash", "ksh"}
# Hidden directories that hold CI configuration (walked; other hidden directories are not).
CONFIG_DIRS = {".github", ".gitlab", ".circleci", ".buildkite", ".devcontainer"}


def _shebang_kind(path: Path) -> str | None:
    """The kind of an extensionless script from its ``#!`` line (``#!/bin/bash``,
    ``#!/usr/bin/env -S python3 -u``), or None when it has none."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO or device is never read (it could block)
        head = os.read(fd, 256).split(b"\n", 1)[0]
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].decode("utf-8", "replace").split()
    words = [w.rsplit("/", 1)[-1] for w in words if not w.startswith("-")]
    if words and words[0] == "env":
        words = words[1:]
    if not words:
        return "unsupported"
    name = words[0]
    if name in SHELL_INTERPRETERS:
        return "shell"
    if name.startswith("python"):
        return "python"
    return "unsupported"


def kind_of(path: Path) -> str | None:
    """The kind of ``path`` by its name, extension or shebang; None for a file of no known
    kind (a directory walk reports it as ``"unsupported"`` when it names a variable)."""
    name, suffix = path.name, path.suffix
    if suffix in (".py", ".pyi"):
        return "python"
    if suffix in SHELL_SUFFIXES:
        return "shell"
    if suffix == ".ipynb":
        return "notebook"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix in DOC_SUFFIXES or (not suffix and name.startswith(DOC_NAMES)):
        return "docs"  # before the Dockerfile names: Dockerfile.md is documentation
    if name.startswith(("Dockerfile", "Containerfile")) or name.endswith((".dockerfile", ".Dockerfile", ".containerfile")):
        return "dockerfile"
    if name == ".env" or name.endswith(".env") or name.startswith(".env."):
        return "dotenv"
    if suffix in UNSUPPORTED_SUFFIXES or name.startswith(UNSUPPORTED_NAMES):
        return "unsupported"
    if not suffix:
        return _shebang_kind(path)
    return None


_HEAD = 8192
_CHUNK = 1 << 20
_BINARY_LIMIT = 16 << 20
_OVERLAP = 2 * max(map(len, LEGACY_MARKERS))
_WIDE_MARKERS = tuple(m.decode().encode(codec) for m in LEGACY_MARKERS for codec in ("utf-16-le", "utf-16-be"))


def _mentions_legacy(path: Path) -> bool:
    """Whether the bytes of the regular file ``path`` name a legacy variable. Read in chunks, so
    a large data file costs no memory. A file with a NUL in its first 8 KiB (binary, or UTF-16)
    is searched for the names in ASCII and UTF-16 in its first 16 MiB only."""
    try:
        with path.open("rb") as f:
            data = f.read(_HEAD)
            binary = b"\0" in data
            markers = LEGACY_MARKERS + _WIDE_MARKERS if binary else LEGACY_MARKERS
            read = len(data)
            while True:
                if any(marker in data for marker in markers):
                    return True
                if binary and read >= _BINARY_LIMIT:
                    return False
                chunk = f.read(_CHUNK)
                if not chunk:
                    return False
                read += len(chunk)
                data = data[-_OVERLAP:] + chunk
    except OSError:
        return True  # let the reader report it with its reason


def _problem(path: Path) -> str | None:
    """Why ``path`` must not be opened (a special file, a symlink loop, a dangling symlink), or
    None for a regular file (a symlink is followed)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop"
        if os.path.islink(path):
            return f"dangling symlink to {os.readlink(path)}"
        return exc.strerror
    if stat.S_ISREG(info.st_mode):
        return None
    from .commit import describe_file_type

    return f"not a regular file ({describe_file_type(info.st_mode)}); not read"


def walk(root: Path, exclude: tuple[str, ...] = (), special: list[Candidate] | None = None, ignore=None):
    """Every regular file under the directory ``root`` that discovery would look at (same skips
    and excludes as :func:`scan`), with its kind (None when it is of no known kind). A file that
    is not regular or cannot be followed (FIFO, device, socket, symlink loop, dangling symlink)
    is never yielded; when it has a kind bf16-migrate handles by its name, it is appended to
    ``special`` (a :class:`Candidate` with its ``problem``) when a list is given.
    ``ignore(path, is_dir)``, when given, skips the files and directories it is True for
    (``.gitignore``: :mod:`bf16_migrate.ignore`)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if (not d.startswith(".") or d in CONFIG_DIRS) and d not in SKIP_DIRS and not d.endswith(".egg-info"))
        if exclude:  # a glob naming a directory skips all of it, as ruff's exclude does
            base = Path(dirpath).relative_to(root)
            dirnames[:] = [d for d in dirnames if not any(fnmatch.fnmatch(d, p) or fnmatch.fnmatch((base / d).as_posix(), p) for p in exclude)]
        if ignore is not None:
            dirnames[:] = [d for d in dirnames if not ignore(Path(dirpath) / d, True)]
        for name in sorted(filenames):
            if is_temporary(name):
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if any(fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern) for pattern in exclude):
                continue
            if ignore is not None and ignore(path, False):
                continue
            problem = _problem(path)
            if problem is not None:
                kind = kind_of(path)
                if special is not None and kind is not None and kind != "unsupported":
                    special.append(Candidate(path, kind, problem))
                continue
            yield path, kind_of(path)


def scan(paths: list[Path], exclude: tuple[str, ...] = (), ignore=None) -> list[Candidate]:
    """The candidate files under ``paths``, sorted, each once (a symlink to a file already found
    is the same file: it is read and written once, under the first name in sorted order).
    Raises :class:`ScanError` for a path that does not exist. Every text file that names a
    legacy variable is a candidate, named explicitly or found in a directory; one of no known
    kind is ``"unsupported"``. A path named explicitly that is not a regular file, and a special
    file of a handled kind found in a directory, is a candidate with a ``problem``."""
    found: dict[Path, Candidate] = {}
    for root in paths:
        if not root.exists():
            if os.path.islink(root):
                problem = _problem(root)
                found.setdefault(root, Candidate(root, kind_of(root) or "unsupported", problem))
                continue
            raise ScanError(f"{root}: no such file or directory")
        if not root.is_dir():
            problem = _problem(root)
            if problem is not None:
                found.setdefault(root, Candidate(root, kind_of(root) or "unsupported", problem))
            elif _mentions_legacy(root):
                found.setdefault(root, Candidate(root, kind_of(root) or "unsupported"))
            continue
        special: list[Candidate] = []
        for path, kind in walk(root, exclude, special, ignore):
            if _mentions_legacy(path):
                found.setdefault(path, Candidate(path, kind or "unsupported"))
        for candidate in special:
            found.setdefault(candidate.path, candidate)
    by_file: dict[Path, Path] = {}
    for path in sorted(found):
        if found[path].problem is not None:
            continue
        real = path.resolve()
        if real in by_file:
            del found[path]  # a second name of the same file
        else:
            by_file[real] = path
    return [found[p] for p in sorted(found)]


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary of :mod:`bf16_migrate.commit` (``.NAME.PID.RANDOM.bf16-migrate``)."""
    from .commit import is_temporary_name

    return is_temporary_name(name)
