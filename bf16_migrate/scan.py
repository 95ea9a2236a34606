"""Paths -> the files to look at, each with its kind.

Directories are walked recursively (hidden directories other than CI configuration ones such as
``.github``, virtual environments, ``__pycache__``, ``node_modules`` and ``*.egg-info`` packaging
metadata are skipped; ``--exclude`` globs apply to paths relative to the argument).
A byte prefilter keeps only files that name a legacy variable, so large trees scan fast; a
file with a NUL byte in its first 8 KiB is binary and skipped (without reading the rest). Kinds
come from the name (``*.py``, ``*.sh``/``*.bash``, ``Dockerfile*``, ``*.yaml``/``*.yml``,
``.env``/``*.env``, ``*.ipynb``, documentation) or, for an extensionless file, from its ``#!``
line. Every other text file that names a variable is a candidate too (``"unsupported"``): the
tool is never silent about a file that names a legacy variable.
"""

from __future__ import annotations

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
        with path.open("rb") as f:
            head = f.readline(256)
    except OSError:
        return None
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


_kind = kind_of


_HEAD = 8192
_CHUNK = 1 << 20
_OVERLAP = max(map(len, LEGACY_MARKERS)) - 1


def _mentions_legacy(path: Path) -> bool:
    """Whether the bytes of ``path`` name a legacy variable; False for a binary file (a NUL in
    its first 8 KiB: the rest is not read). Read in chunks, so a large data file costs no memory;
    a FIFO or a device is never opened (reading it could block)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        with path.open("rb") as f:
            data = f.read(_HEAD)
            if b"\0" in data:
                return False  # binary file
            while True:
                if any(marker in data for marker in LEGACY_MARKERS):
                    return True
                chunk = f.read(_CHUNK)
                if not chunk:
                    return False
                data = data[-_OVERLAP:] + chunk
    except OSError:
        return True  # let the reader report it with its reason


def walk(root: Path, exclude: tuple[str, ...] = ()):
    """Every file under the directory ``root`` that discovery would look at (same skips and
    excludes as :func:`scan`), with its kind (None when it is of no known kind)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if (not d.startswith(".") or d in CONFIG_DIRS) and d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if any(fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern) for pattern in exclude):
                continue
            yield path, kind_of(path)


def scan(paths: list[Path], exclude: tuple[str, ...] = ()) -> list[Candidate]:
    """The candidate files under ``paths``, sorted, each once. Raises :class:`ScanError` for a
    path that does not exist. Every text file that names a legacy variable is a candidate,
    named explicitly or found in a directory; one of no known kind is ``"unsupported"``."""
    found: dict[Path, Candidate] = {}
    for root in paths:
        if not root.exists():
            raise ScanError(f"{root}: no such file or directory")
        if root.is_file():
            if _mentions_legacy(root):
                found.setdefault(root, Candidate(root, kind_of(root) or "unsupported"))
            continue
        for path, kind in walk(root, exclude):
            if _mentions_legacy(path):
                found.setdefault(path, Candidate(path, kind or "unsupported"))
    return [found[p] for p in sorted(found)]
